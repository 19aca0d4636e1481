import { afterAll } from "vitest";
import { stopSharedPostgres } from "./postgres.ts";

// Registered before the file's own hooks, so it runs after them: its test servers stop first.
afterAll(stopSharedPostgres);
