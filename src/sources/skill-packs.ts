import type { Logger } from "pino";
import type { SkillPackConfig } from "../config/index.ts";
import { failedPrecondition } from "../errors.ts";
import type { LoadProgress, SkillLibrary } from "../skills/index.ts";

/**
 * Loads the packs named in the config at start. A pack with any invalid file fails the start (the
 * error lists every problem), so a server never runs with half a pack.
 *
 * Config packs have no caller to take tenant and project ids from, so they must be global;
 * tenant- and project-scoped packs are loaded with LoadSkillPack by a caller of that scope.
 */
export async function loadConfiguredSkillPacks(
  skills: SkillLibrary,
  packs: readonly SkillPackConfig[],
  logger: Logger,
  onProgress?: (pack: string, progress: LoadProgress) => void,
): Promise<void> {
  for (const pack of packs) {
    if (pack.scopeMode !== "global") {
      throw failedPrecondition(
        `skill_packs "${pack.name}": scope_mode ${pack.scopeMode} needs a tenant${pack.scopeMode === "project" ? " and project" : ""}; ` +
          "use scope_mode: global here, or load the pack with LoadSkillPack as a caller of that scope",
      );
    }
    const result = await skills.loadSharedSkillPack({
      pack: pack.name,
      path: pack.path,
      scope: { kind: "global", tenantId: "", projectId: "" },
      updateExistingPackSkills: pack.updateExistingPackSkills,
      onProgress: onProgress ? (progress) => onProgress(pack.name, progress) : undefined,
    });
    logger.info({ ...result, path: pack.path }, "skill pack loaded");
  }
}
