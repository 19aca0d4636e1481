import type { QueryRewrite as ProtoQueryRewrite } from "../../../gen/ts/wayfind/v1/common_pb.ts";
import {
  EFFECTIVE_SEARCH_TYPES,
  MATCH_QUALITIES,
  QUERY_REWRITE_KINDS,
  SEMANTIC_STATUSES,
  SEMANTIC_TIERS,
} from "../../api-enums/enums.ts";
import type { SearchReport } from "../../search/answer.ts";

/** What tool and skill searches report beside their hits, as SearchToolsResponse / SearchSkillsResponse fields. */
export function searchReportToProto(report: SearchReport) {
  return {
    effectiveSearchType: EFFECTIVE_SEARCH_TYPES[report.effectiveSearchType],
    matchQuality: MATCH_QUALITIES[report.matchQuality],
    semanticStatus: SEMANTIC_STATUSES[report.semantic.status],
    semanticPending: report.semantic.pending,
    semanticTextsPending: report.semantic.textsPending,
    semanticTier: SEMANTIC_TIERS[report.semantic.tier],
    queryRewrites: report.rewrites.map(
      (r): Omit<ProtoQueryRewrite, "$typeName"> => ({
        from: r.from,
        to: r.to,
        kind: QUERY_REWRITE_KINDS[r.kind],
      }),
    ),
  };
}
