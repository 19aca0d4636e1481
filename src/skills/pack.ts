import { posix } from "node:path";
import { LIMITS } from "../limits.ts";
import type { SkillContent } from "./model.ts";

/**
 * Skill packs: the vocabulary shared by reading files (pack-files.ts), finding skill records in them
 * (pack-records.ts) and validating and naming the skills (pack-parse.ts).
 */

/** One file of an inline pack. `path` is relative to the pack root, `/`-separated. */
export interface PackFile {
  readonly path: string;
  readonly content: string;
}

/** One reason a pack is rejected. */
export interface PackProblem {
  readonly file: string;
  readonly line?: number;
  readonly field?: string;
  readonly reason: string;
}

export interface PackLimits {
  readonly maxFileBytes: number;
  readonly maxPackBytes: number;
  readonly maxFiles: number;
  readonly maxSkills: number;
}

export const DEFAULT_PACK_LIMITS: PackLimits = {
  maxFileBytes: 1024 * 1024,
  maxPackBytes: 32 * 1024 * 1024,
  maxFiles: 20_000,
  maxSkills: 50_000,
};

/** A validated skill of a pack, before it meets the store. */
export interface ParsedSkill {
  readonly content: SkillContent;
  readonly contentHash: string;
  readonly file: string;
  readonly line: number | undefined;
}

/** A pack's skill as it is stored: its content, content hash and id (given once, kept by every replica). */
export type PackSkill = Pick<ParsedSkill, "content" | "contentHash"> & { readonly id: string };

export interface ParsedPack {
  readonly skills: ParsedSkill[];
  readonly problems: PackProblem[];
  readonly fileCount: number;
  /** sha256 over every skill file's path and bytes: equal fingerprints mean an identical pack. */
  readonly fingerprint: string;
}

export function formatProblem(p: PackProblem): string {
  const where = p.line === undefined ? p.file : `${p.file}:${p.line}`;
  return p.field ? `${where}: ${p.field}: ${p.reason}` : `${where}: ${p.reason}`;
}

/** A pack name: lowercase letters, digits, '-' and '_', starting with a letter or digit. */
export const PACK_NAME = new RegExp(`^[a-z0-9][a-z0-9_-]{0,${LIMITS.packName.max - 1}}$`);
export const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export type FileKind = "md" | "yaml" | "json" | "jsonl" | "agent";

export function kindOf(path: string): FileKind | undefined {
  const base = posix.basename(path);
  if (base === "SKILL.md") return "agent";
  const lower = base.toLowerCase();
  if (lower.endsWith(".skill.md")) return "md";
  if (lower.endsWith(".skill.yaml") || lower.endsWith(".skill.yml")) return "yaml";
  if (lower.endsWith(".skill.json")) return "json";
  if (lower.endsWith(".skill.jsonl")) return "jsonl";
  return undefined;
}
