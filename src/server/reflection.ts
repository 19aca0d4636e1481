import {
  create,
  type DescFile,
  type DescService,
  fromBinary,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import {
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
  ServerReflectionResponseSchema,
  ServerReflection as ServerReflectionV1,
} from "../../gen/ts/grpc/reflection/v1/reflection_pb.ts";
import {
  ServerReflection as ServerReflectionV1Alpha,
  ServerReflectionRequestSchema as V1AlphaRequestSchema,
  ServerReflectionResponseSchema as V1AlphaResponseSchema,
} from "../../gen/ts/grpc/reflection/v1alpha/reflection_pb.ts";
import { type MethodRoute, serviceRoutes } from "./transport/rpc.ts";

const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;

/**
 * gRPC server reflection (v1 and v1alpha), so `buf curl`, grpcurl and Postman can list services
 * and call methods without local .proto files. Answers come from the descriptors compiled into the
 * generated code, so they always match what the server speaks.
 */
export function reflectionRoutes(services: readonly DescService[]): MethodRoute[] {
  const index = indexFiles(services.map((service) => service.file));
  const answer = (request: ServerReflectionRequest) => answerRequest(index, services, request);
  return [
    ...serviceRoutes(ServerReflectionV1, {
      serverReflectionInfo: (requests) => answerEach(requests, answer),
    }),
    // v1alpha is wire-identical to v1: translate through bytes and reuse the v1 answers.
    ...serviceRoutes(ServerReflectionV1Alpha, {
      serverReflectionInfo: (requests) =>
        answerEach(requests, (request) => {
          const v1Request = fromBinary(
            ServerReflectionRequestSchema,
            toBinary(V1AlphaRequestSchema, request),
          );
          const v1Response = create(ServerReflectionResponseSchema, answer(v1Request));
          return fromBinary(V1AlphaResponseSchema, toBinary(ServerReflectionResponseSchema, v1Response));
        }),
    }),
  ];
}

async function* answerEach<Req, Res>(requests: AsyncIterable<Req>, answer: (request: Req) => Res) {
  for await (const request of requests) yield answer(request);
}

interface FileIndex {
  readonly files: ReadonlyMap<string, DescFile>;
  /** Fully-qualified name of every service, method, message, enum and extension → its file. */
  readonly symbols: ReadonlyMap<string, DescFile>;
}

function indexFiles(roots: readonly DescFile[]): FileIndex {
  const files = new Map<string, DescFile>();
  const symbols = new Map<string, DescFile>();
  for (const file of roots.flatMap(withDependencies)) {
    // protobuf-es names files without ".proto"; reflection clients ask with it.
    const fileName = file.proto.name;
    if (files.has(fileName)) continue;
    files.set(fileName, file);
    for (const type of nestedTypes(file)) {
      symbols.set(type.typeName, file);
      if (type.kind === "service")
        for (const method of type.methods) symbols.set(`${type.typeName}.${method.name}`, file);
    }
  }
  return { files, symbols };
}

function answerRequest(
  index: FileIndex,
  services: readonly DescService[],
  request: ServerReflectionRequest,
): MessageInitShape<typeof ServerReflectionResponseSchema> {
  const base = { validHost: request.host, originalRequest: request };
  const error = (code: number, message: string) => ({
    ...base,
    messageResponse: { case: "errorResponse" as const, value: { errorCode: code, errorMessage: message } },
  });
  const files = (file: DescFile | undefined, what: string) =>
    file
      ? {
          ...base,
          messageResponse: {
            case: "fileDescriptorResponse" as const,
            value: {
              fileDescriptorProto: withDependencies(file).map((f) =>
                toBinary(FileDescriptorProtoSchema, f.proto),
              ),
            },
          },
        }
      : error(NOT_FOUND, `${what} not found`);

  const { messageRequest } = request;
  switch (messageRequest.case) {
    case "listServices":
      return {
        ...base,
        messageResponse: {
          case: "listServicesResponse",
          value: { service: services.map((service) => ({ name: service.typeName })) },
        },
      };
    case "fileByFilename":
      return files(index.files.get(messageRequest.value), `file ${messageRequest.value}`);
    case "fileContainingSymbol":
      return files(
        index.symbols.get(messageRequest.value.replace(/^\./, "")),
        `symbol ${messageRequest.value}`,
      );
    case "fileContainingExtension":
      return error(NOT_FOUND, `extension ${messageRequest.value.containingType} not found`);
    case "allExtensionNumbersOfType":
      return {
        ...base,
        messageResponse: {
          case: "allExtensionNumbersResponse",
          value: { baseTypeName: messageRequest.value, extensionNumber: [] },
        },
      };
    default:
      return error(UNIMPLEMENTED, "empty reflection request");
  }
}

/** The file first, then every transitive dependency, each once. */
function withDependencies(file: DescFile): DescFile[] {
  const seen = new Map<string, DescFile>();
  const visit = (f: DescFile) => {
    if (seen.has(f.name)) return;
    seen.set(f.name, f);
    for (const dependency of f.dependencies) visit(dependency);
  };
  visit(file);
  return [...seen.values()];
}
