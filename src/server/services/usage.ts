import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { UsageTotals as ProtoTotals, UsageService } from "../../../gen/ts/wayfind/v1/usage_pb.ts";
import { PROVIDERS, USAGE_GROUP_BY } from "../../api-enums/enums.ts";
import { invalidArgument } from "../../errors.ts";
import type { EventLog } from "../../events/index.ts";
import type { UsageBook, UsageTotals } from "../../usage/index.ts";
import { callerOf, callSignal, principalOf } from "../pipeline.ts";
import { USAGE_EVENT_TYPES, watchEvents } from "./watch.ts";

export function usageService(ledger: UsageBook, events: EventLog): ServiceImpl<typeof UsageService> {
  return {
    async recordUsage(request, context) {
      const provider = PROVIDERS.fromProto(request.provider, "provider");
      if (provider === undefined) throw invalidArgument("provider is required, e.g. PROVIDER_ANTHROPIC");
      if (!request.usage)
        throw invalidArgument("usage is required: input_tokens, output_tokens, cache_*_input_tokens");
      const { usage } = request;
      const result = await ledger.record(callerOf(context), {
        provider,
        model: request.model,
        idempotencyKey: request.idempotencyKey,
        occurredAt: request.occurredAt ? timestampDate(request.occurredAt) : undefined,
        usage: {
          inputTokens: Number(usage.inputTokens),
          outputTokens: Number(usage.outputTokens),
          cacheReadInputTokens: Number(usage.cacheReadInputTokens),
          cacheCreationInputTokens: Number(usage.cacheCreationInputTokens),
          cacheCreation1hInputTokens: Number(usage.cacheCreation1hInputTokens),
        },
      });
      return {
        costUsd: result.costUsd ?? undefined,
        duplicate: result.duplicate,
        unknownCostReason: result.unknownCostReason ?? "",
      };
    },

    async getUsageSummary(request, context) {
      const groupBy = USAGE_GROUP_BY.fromProto(request.groupBy, "group_by");
      const summary = await ledger.summary(callerOf(context), {
        tenantId: request.tenantId || undefined,
        sessionId: request.sessionId || undefined,
        runId: request.runId || undefined,
        model: request.model || undefined,
        provider: PROVIDERS.fromProto(request.provider, "provider"),
        since: request.startTime ? timestampDate(request.startTime) : undefined,
        until: request.endTime ? timestampDate(request.endTime) : undefined,
        groupBy: groupBy ? [groupBy] : [],
      });
      return {
        totals: toProtoTotals(summary.totals),
        groups: summary.groups.map((group) => ({
          key: groupBy ? (group.key[groupBy] ?? "") : "",
          totals: toProtoTotals(group.totals),
        })),
      };
    },

    watchUsageEvents: (request, context) =>
      watchEvents(events, principalOf(context), request.filter, USAGE_EVENT_TYPES, callSignal(context)),
  };
}

function toProtoTotals(totals: UsageTotals): Omit<ProtoTotals, "$typeName"> {
  return {
    calls: BigInt(totals.calls),
    inputTokens: BigInt(totals.inputTokens),
    outputTokens: BigInt(totals.outputTokens),
    cacheReadInputTokens: BigInt(totals.cacheReadInputTokens),
    cacheCreationInputTokens: BigInt(totals.cacheCreationInputTokens),
    cacheCreation1hInputTokens: BigInt(totals.cacheCreation1hInputTokens),
    totalCostUsd: totals.totalCostUsd,
    callsWithUnknownCost: BigInt(totals.unknownCostCalls),
    cacheHitRate: totals.cacheHitRate ?? 0,
    rateLimitedInputTokens: BigInt(totals.rateLimitInputTokens),
    savingsUsd: totals.savingsUsd,
    uncachedCostUsd: totals.uncachedCostUsd,
  };
}
