import { createRegistry } from "@bufbuild/protobuf";
import { file_wayfind_v1_keys } from "../../../gen/ts/wayfind/v1/keys_pb.ts";
import { file_wayfind_v1_skills } from "../../../gen/ts/wayfind/v1/skills_pb.ts";
import { file_wayfind_v1_tools } from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { file_wayfind_v1_usage } from "../../../gen/ts/wayfind/v1/usage_pb.ts";

/** The wayfind API's message types by name (every request message of its services lives in these files). */
export const apiRegistry = createRegistry(
  file_wayfind_v1_tools,
  file_wayfind_v1_skills,
  file_wayfind_v1_usage,
  file_wayfind_v1_keys,
);
