import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ApiKeyInfo, CreateApiKeyRequest, KeyService } from "../../../gen/ts/wayfind/v1/keys_pb.ts";
import { KEY_ORIGINS } from "../../api-enums/enums.ts";
import type { ApiKey, KeyAdmin, KeyRequest } from "../../auth/index.ts";
import { principalOf } from "../pipeline.ts";

/** KeyService: API keys managed over the API, for a web console (src/auth/key-admin.ts). */
export function keyService(admin: KeyAdmin): ServiceImpl<typeof KeyService> {
  return {
    listApiKeys: async (_request, context) => ({
      keys: (await admin.list(principalOf(context))).map(toProtoKey),
    }),

    async createApiKey(request, context) {
      const { key, secret } = await admin.create(principalOf(context), {
        id: request.id,
        tenant: request.tenantId,
        roles: request.roles,
        projects: request.projects,
        entitlements: request.entitlements,
        expiry: expiryOf(request.expiry),
      });
      return { key: toProtoKey(key), secret };
    },

    revokeApiKey: async (request, context) => ({
      revoked: await admin.revoke(principalOf(context), request.id, request.tenantId),
    }),
  };
}

function expiryOf(expiry: CreateApiKeyRequest["expiry"]): KeyRequest["expiry"] {
  switch (expiry.case) {
    case "expiresInSeconds":
      return { inSeconds: Number(expiry.value) };
    case "expiresAt":
      return { atMs: timestampMs(expiry.value) };
    default:
      return undefined;
  }
}

/** What a key grants and its state; never its secret or its hash. */
function toProtoKey(key: ApiKey): Omit<ApiKeyInfo, "$typeName"> {
  return {
    id: key.id,
    tenantId: key.tenant,
    roles: [...key.roles],
    projects: [...key.projects],
    entitlements: [...key.entitlements],
    origin: KEY_ORIGINS[key.origin],
    createdAt: optionalTimestamp(key.createdAtMs),
    expiresAt: optionalTimestamp(key.expiresAtMs),
    revokedAt: optionalTimestamp(key.revokedAtMs),
  };
}

function optionalTimestamp(ms: number | undefined) {
  return ms === undefined ? undefined : timestampFromMs(ms);
}
