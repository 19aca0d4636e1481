export {
  type AccessControl,
  type CallerAccess,
  createAccessControl,
} from "./access.ts";
export { compileGlobs, type NameMatcher } from "./glob.ts";
