import { activationMigrations } from "../activation/index.ts";
import { authMigrations } from "../auth/index.ts";
import type { Migration } from "../database/sqlite.ts";
import { discoveryMigrations } from "../discovery/index.ts";
import { eventsMigrations } from "../events/index.ts";
import { learningMigrations } from "../learning/index.ts";
import { FOLLOWER_MIGRATIONS } from "../replication/follower.ts";
import { semanticMigrations } from "../semantic/index.ts";
import { skillsMigrations } from "../skills/index.ts";
import { usageMigrations } from "../usage/index.ts";

/** Every capability's migrations, in the order they apply. Append; never edit an applied one. */
export const allMigrations: readonly Migration[] = [
  ...eventsMigrations,
  ...usageMigrations,
  ...discoveryMigrations,
  ...skillsMigrations,
  ...activationMigrations,
  ...semanticMigrations,
  ...authMigrations,
  ...FOLLOWER_MIGRATIONS,
  ...learningMigrations,
];
