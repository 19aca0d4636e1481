export {
  type AccessControl,
  type CallerAccess,
  createAccessControl,
  type ToolAccess,
} from "./access.ts";
export { compileGlobs, type NameMatcher } from "./glob.ts";
