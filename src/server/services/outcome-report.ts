import { OUTCOMES } from "../../api-enums/enums.ts";
import { invalidArgument } from "../../errors.ts";
import type { Outcome } from "../../learning/index.ts";
import { checkSize, type Limit } from "../../limits.ts";

/** A ReportToolOutcome or ReportSkillOutcome request, checked against its limits. */
export function outcomeReportOf(
  request: { searchId: string; outcome: number; note: string; idempotencyKey: string },
  name: string,
  limits: { searchId: Limit; name: Limit; note: Limit; key: Limit },
): { searchId: string; name: string; outcome: Outcome; note: string; key: string } {
  checkSize(limits.searchId, request.searchId.length);
  checkSize(limits.name, name.length);
  checkSize(limits.note, request.note.length);
  checkSize(limits.key, request.idempotencyKey.length);
  const outcome = OUTCOMES.fromProto(request.outcome, "outcome");
  if (outcome === undefined)
    throw invalidArgument("outcome is required: OUTCOME_SUCCEEDED, OUTCOME_FAILED or OUTCOME_WRONG_TOOL");
  return { searchId: request.searchId, name, outcome, note: request.note, key: request.idempotencyKey };
}
