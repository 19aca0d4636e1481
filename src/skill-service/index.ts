/** Public surface of the skill service: what a caller may do with skills. */
export { SkillService } from "./service.ts";
