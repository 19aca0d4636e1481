package main

// These tests run the Go client against the real wayfind server: they start
// `node bin/wayfind.js serve --port 0` from the repository root (npm ci must have run),
// talk to it over native gRPC and stop it with SIGTERM at the end.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	wayfindv1 "github.com/wayfind-dev/wayfind/gen/go/wayfind/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

const (
	startTimeout = 30 * time.Second
	rpcTimeout   = 10 * time.Second
	stopTimeout  = 15 * time.Second
	sonnet       = "claude-sonnet-4-5-20250929"
)

func TestWayfind(t *testing.T) {
	srv := startServer(t)
	conn, err := grpc.NewClient(srv.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient(%s): %v", srv.addr, err)
	}
	defer conn.Close()

	t.Run("Health", func(t *testing.T) { testHealth(t, conn) })
	t.Run("Reflection", func(t *testing.T) { testReflection(t, conn) })
	t.Run("ReflectionFileByFilename", func(t *testing.T) { testReflectionFileByFilename(t, conn) })
	t.Run("ReflectionHalfClose", func(t *testing.T) { testReflectionHalfClose(t, conn) })
	t.Run("RecordUsageIdempotentAndSummary", func(t *testing.T) { testRecordUsage(t, conn) })
	t.Run("InvalidArgument", func(t *testing.T) { testInvalidArgument(t, conn) })
	t.Run("AlreadyExists", func(t *testing.T) { testAlreadyExists(t, conn) })
	t.Run("WatchUsageEvents", func(t *testing.T) { testWatchUsageEvents(t, conn) })
	t.Run("AgentFlow", func(t *testing.T) { testAgentFlow(t, conn) })
	t.Run("RelevantSkills", func(t *testing.T) { testRelevantSkills(t, conn) })
	t.Run("DiscoveryTools", func(t *testing.T) { testDiscoveryTools(t, conn) })
	t.Run("ToolErrors", func(t *testing.T) { testToolErrors(t, conn) })
	t.Run("ReportToolOutcome", func(t *testing.T) { testReportToolOutcome(t, conn) })
	t.Run("BadRequestDetails", func(t *testing.T) { testBadRequestDetails(t, conn) })
	t.Run("Example", func(t *testing.T) { testExample(t, srv.addr, connection{}) })
	t.Run("DispatchExample", func(t *testing.T) { testDispatchExample(t, srv.addr) })
	t.Run("ConsumerResumesWithoutLossOrRepeat", func(t *testing.T) { testConsumer(t, conn) })

	// Last: SIGTERM drains the server, which must exit 0.
	srv.stop(t)
}

func rpcContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	t.Cleanup(cancel)
	return ctx
}

// tenant returns a tenant id of its own for each test, so their summaries don't mix.
func tenant(t *testing.T) *wayfindv1.CallerContext {
	return &wayfindv1.CallerContext{
		TenantId:  "go-" + strings.ReplaceAll(t.Name(), "/", "-"),
		UserId:    "user-1",
		SessionId: "session-1",
		RunId:     "run-1",
	}
}

func testHealth(t *testing.T, conn *grpc.ClientConn) {
	health := healthpb.NewHealthClient(conn)
	for _, service := range []string{"", "wayfind.v1.UsageService", "wayfind.v1.ToolDiscoveryService", "wayfind.v1.SkillService"} {
		resp, err := health.Check(rpcContext(t), &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("Check(%q): %v", service, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Check(%q) = %v, want SERVING", service, resp.GetStatus())
		}
	}
	_, err := health.Check(rpcContext(t), &healthpb.HealthCheckRequest{Service: "no.such.Service"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("Check(unknown service): got %v, want NOT_FOUND", err)
	}
}

func testReflection(t *testing.T, conn *grpc.ClientConn) {
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(rpcContext(t))
	if err != nil {
		t.Fatalf("ServerReflectionInfo: %v", err)
	}
	ask := func(req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		t.Helper()
		if err := stream.Send(req); err != nil {
			t.Fatalf("reflection send: %v", err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("reflection recv: %v", err)
		}
		if e := resp.GetErrorResponse(); e != nil {
			t.Fatalf("reflection error: %d %s", e.GetErrorCode(), e.GetErrorMessage())
		}
		return resp
	}

	list := ask(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	})
	var names []string
	for _, s := range list.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{
		"wayfind.v1.ToolDiscoveryService", "wayfind.v1.SkillService", "wayfind.v1.UsageService", "grpc.health.v1.Health",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v, missing %s", names, want)
		}
	}

	// The descriptor served for a service must be the real one, with its methods.
	file := ask(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "wayfind.v1.UsageService"},
	})
	var methods []string
	for _, raw := range file.GetFileDescriptorResponse().GetFileDescriptorProto() {
		var fd descriptorpb.FileDescriptorProto
		if err := proto.Unmarshal(raw, &fd); err != nil {
			t.Fatalf("unmarshal file descriptor: %v", err)
		}
		for _, svc := range fd.GetService() {
			if fd.GetPackage()+"."+svc.GetName() == "wayfind.v1.UsageService" {
				for _, m := range svc.GetMethod() {
					methods = append(methods, m.GetName())
				}
			}
		}
	}
	for _, want := range []string{"RecordUsage", "GetUsageSummary", "WatchUsageEvents"} {
		if !slices.Contains(methods, want) {
			t.Errorf("reflected UsageService has methods %v, missing %s", methods, want)
		}
	}
}

// testReflectionFileByFilename: clients resolve imports by file name, as in FileDescriptorProto.dependency.
func testReflectionFileByFilename(t *testing.T, conn *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatalf("ServerReflectionInfo: %v", err)
	}
	const name = "wayfind/v1/common.proto"
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileByFilename{FileByFilename: name},
	}); err != nil {
		t.Fatalf("reflection send: %v", err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("reflection recv: %v", err)
	}
	if e := resp.GetErrorResponse(); e != nil {
		t.Fatalf("file_by_filename %q: error %d %s", name, e.GetErrorCode(), e.GetErrorMessage())
	}
	var names []string
	for _, raw := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
		var fd descriptorpb.FileDescriptorProto
		if err := proto.Unmarshal(raw, &fd); err != nil {
			t.Fatalf("unmarshal file descriptor: %v", err)
		}
		names = append(names, fd.GetName())
	}
	if len(names) == 0 || names[0] != name {
		t.Errorf("file_by_filename %q returned files %v, want %s first", name, names, name)
	}
}

// testReflectionHalfClose: a bidi stream the client half-closes must end with OK once the server
// has answered everything (clients that send all requests up front wait for that end).
func testReflectionHalfClose(t *testing.T, conn *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatalf("ServerReflectionInfo: %v", err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatalf("reflection send: %v", err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatalf("reflection CloseSend: %v", err)
	}
	if resp, err := stream.Recv(); err != nil || resp.GetListServicesResponse() == nil {
		t.Fatalf("reflection recv: got (%v, %v), want the service list", resp, err)
	}
	if resp, err := stream.Recv(); err != io.EOF {
		t.Errorf("reflection after CloseSend and the last answer: got (%v, %v), want io.EOF (status OK)", resp, err)
	}
}

func testRecordUsage(t *testing.T, conn *grpc.ClientConn) {
	usage := wayfindv1.NewUsageServiceClient(conn)
	caller := tenant(t)
	req := &wayfindv1.RecordUsageRequest{
		Caller:         caller,
		Provider:       wayfindv1.Provider_PROVIDER_ANTHROPIC,
		Model:          sonnet,
		Usage:          &wayfindv1.Usage{InputTokens: 1200, OutputTokens: 350, CacheReadInputTokens: 8000},
		IdempotencyKey: "msg_01",
	}
	first, err := usage.RecordUsage(rpcContext(t), req)
	if err != nil {
		t.Fatalf("RecordUsage: %v", err)
	}
	if first.GetDuplicate() {
		t.Errorf("first RecordUsage: duplicate = true, want false")
	}
	if first.CostUsd == nil {
		t.Fatalf("RecordUsage(%s): no cost (%q), want a priced call", sonnet, first.GetUnknownCostReason())
	}
	// Sonnet 4.5: $3/M input, $15/M output, cache reads at 0.1× input.
	wantCost := 1200*3e-6 + 350*15e-6 + 8000*0.3e-6
	if math.Abs(first.GetCostUsd()-wantCost) > 1e-9 {
		t.Errorf("cost_usd = %.9f, want %.9f", first.GetCostUsd(), wantCost)
	}

	// A retry (same key, same values) is acknowledged, marked duplicate and counted once.
	retry, err := usage.RecordUsage(rpcContext(t), req)
	if err != nil {
		t.Fatalf("RecordUsage retry: %v", err)
	}
	if !retry.GetDuplicate() || retry.GetCostUsd() != first.GetCostUsd() {
		t.Errorf("retry = {duplicate:%t cost:%v}, want {duplicate:true cost:%v}", retry.GetDuplicate(), retry.GetCostUsd(), first.GetCostUsd())
	}

	second := proto.Clone(req).(*wayfindv1.RecordUsageRequest)
	second.IdempotencyKey = "msg_02"
	second.Usage = &wayfindv1.Usage{InputTokens: 800, OutputTokens: 100, CacheCreationInputTokens: 2000}
	if _, err := usage.RecordUsage(rpcContext(t), second); err != nil {
		t.Fatalf("RecordUsage second call: %v", err)
	}

	summary, err := usage.GetUsageSummary(rpcContext(t), &wayfindv1.GetUsageSummaryRequest{Caller: caller})
	if err != nil {
		t.Fatalf("GetUsageSummary: %v", err)
	}
	got := summary.GetTotals()
	if got.GetCalls() != 2 {
		t.Errorf("calls = %d, want 2 (the retry must count once)", got.GetCalls())
	}
	if got.GetInputTokens() != 2000 || got.GetOutputTokens() != 450 ||
		got.GetCacheReadInputTokens() != 8000 || got.GetCacheCreationInputTokens() != 2000 {
		t.Errorf("token totals = %v, want input 2000, output 450, cache read 8000, cache creation 2000", got)
	}
	// cache_read ÷ (input + cache_read + cache_creation)
	if want := 8000.0 / (2000 + 8000 + 2000); math.Abs(got.GetCacheHitRate()-want) > 1e-9 {
		t.Errorf("cache_hit_rate = %v, want %v", got.GetCacheHitRate(), want)
	}
	if got.GetTotalCostUsd() <= first.GetCostUsd() || got.GetCallsWithUnknownCost() != 0 {
		t.Errorf("total_cost_usd = %v (unknown %d), want more than the first call's %v", got.GetTotalCostUsd(), got.GetCallsWithUnknownCost(), first.GetCostUsd())
	}

	// Another tenant sees none of it.
	other, err := usage.GetUsageSummary(rpcContext(t), &wayfindv1.GetUsageSummaryRequest{
		Caller: &wayfindv1.CallerContext{TenantId: caller.GetTenantId() + "-other"},
	})
	if err != nil {
		t.Fatalf("GetUsageSummary(other tenant): %v", err)
	}
	if other.GetTotals().GetCalls() != 0 {
		t.Errorf("other tenant sees %d calls, want 0", other.GetTotals().GetCalls())
	}
}

func testInvalidArgument(t *testing.T, conn *grpc.ClientConn) {
	usage := wayfindv1.NewUsageServiceClient(conn)
	caller := tenant(t)
	valid := func() *wayfindv1.RecordUsageRequest {
		return &wayfindv1.RecordUsageRequest{
			Caller:         caller,
			Provider:       wayfindv1.Provider_PROVIDER_ANTHROPIC,
			Model:          sonnet,
			Usage:          &wayfindv1.Usage{InputTokens: 10, OutputTokens: 5},
			IdempotencyKey: "k",
		}
	}
	cases := map[string]func(*wayfindv1.RecordUsageRequest){
		"missing provider":        func(r *wayfindv1.RecordUsageRequest) { r.Provider = wayfindv1.Provider_PROVIDER_UNSPECIFIED },
		"missing usage":           func(r *wayfindv1.RecordUsageRequest) { r.Usage = nil },
		"missing idempotency key": func(r *wayfindv1.RecordUsageRequest) { r.IdempotencyKey = "" },
		"negative tokens":         func(r *wayfindv1.RecordUsageRequest) { r.Usage.InputTokens = -1 },
	}
	for name, mutate := range cases {
		req := valid()
		mutate(req)
		_, err := usage.RecordUsage(rpcContext(t), req)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: got %v, want INVALID_ARGUMENT", name, err)
		}
	}
	_, err := usage.RecordUsage(rpcContext(t), &wayfindv1.RecordUsageRequest{
		Caller: caller, Model: sonnet, Usage: &wayfindv1.Usage{InputTokens: 1}, IdempotencyKey: "k",
	})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "provider") {
		t.Errorf("missing provider: got %v, want INVALID_ARGUMENT naming the provider", err)
	}

	// Nothing invalid was recorded.
	summary, err := usage.GetUsageSummary(rpcContext(t), &wayfindv1.GetUsageSummaryRequest{Caller: caller})
	if err != nil {
		t.Fatalf("GetUsageSummary: %v", err)
	}
	if summary.GetTotals().GetCalls() != 0 {
		t.Errorf("calls = %d after only invalid requests, want 0", summary.GetTotals().GetCalls())
	}

	// Watching an event type the usage stream doesn't carry is INVALID_ARGUMENT as well.
	stream, err := usage.WatchUsageEvents(rpcContext(t), &wayfindv1.WatchUsageEventsRequest{
		Caller: caller, Filter: &wayfindv1.EventFilter{Types: []string{"no_such_event"}},
	})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("WatchUsageEvents(unknown type): got %v, want INVALID_ARGUMENT", err)
	}
}

func testAlreadyExists(t *testing.T, conn *grpc.ClientConn) {
	usage := wayfindv1.NewUsageServiceClient(conn)
	req := &wayfindv1.RecordUsageRequest{
		Caller:         tenant(t),
		Provider:       wayfindv1.Provider_PROVIDER_OPENAI,
		Model:          "gpt-5",
		Usage:          &wayfindv1.Usage{InputTokens: 10, OutputTokens: 5},
		IdempotencyKey: "resp_1",
	}
	if _, err := usage.RecordUsage(rpcContext(t), req); err != nil {
		t.Fatalf("RecordUsage: %v", err)
	}
	req.Usage.OutputTokens = 6 // same key, different call
	_, err := usage.RecordUsage(rpcContext(t), req)
	if status.Code(err) != codes.AlreadyExists {
		t.Errorf("same key, different values: got %v, want ALREADY_EXISTS", err)
	}
}

func testWatchUsageEvents(t *testing.T, conn *grpc.ClientConn) {
	usage := wayfindv1.NewUsageServiceClient(conn)
	caller := tenant(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := usage.WatchUsageEvents(ctx, &wayfindv1.WatchUsageEventsRequest{
		Caller: caller,
		Filter: &wayfindv1.EventFilter{EventTypes: []wayfindv1.EventType{wayfindv1.EventType_EVENT_TYPE_USAGE_RECORDED}},
	})
	if err != nil {
		t.Fatalf("WatchUsageEvents: %v", err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatalf("watch: first message: %v", err)
	}
	if first.GetStatus() == nil {
		t.Fatalf("watch: first message = %v, want a status", first)
	}
	if first.GetStatus().GetEventsLost() {
		t.Errorf("watch: status.events_lost = true on a fresh stream")
	}

	// The status means the subscription is live: what is recorded now must arrive.
	record := func(key string, input int64) {
		t.Helper()
		_, err := usage.RecordUsage(rpcContext(t), &wayfindv1.RecordUsageRequest{
			Caller: caller, Provider: wayfindv1.Provider_PROVIDER_ANTHROPIC, Model: sonnet,
			Usage: &wayfindv1.Usage{InputTokens: input, OutputTokens: 7}, IdempotencyKey: key,
		})
		if err != nil {
			t.Fatalf("RecordUsage(%s): %v", key, err)
		}
	}
	record("w1", 111)
	record("w1", 111) // a retry emits no second event
	record("w2", 222)

	nextEvent := func() *wayfindv1.Event {
		t.Helper()
		for {
			msg, err := stream.Recv()
			if err != nil {
				t.Fatalf("watch: recv: %v", err)
			}
			if ev := msg.GetEvent(); ev != nil {
				return ev
			}
			// status or heartbeat: keep reading
		}
	}
	var lastID uint64
	for _, wantInput := range []uint64{111, 222} {
		ev := nextEvent()
		if ev.GetEventType() != wayfindv1.EventType_EVENT_TYPE_USAGE_RECORDED || ev.GetTenantId() != caller.GetTenantId() ||
			ev.GetSessionId() != caller.GetSessionId() || ev.GetRunId() != caller.GetRunId() {
			t.Errorf("event = %v, want usage_recorded for %s/%s/%s", ev, caller.GetTenantId(), caller.GetSessionId(), caller.GetRunId())
		}
		// The typed payload: integer token counts, the provider as its enum.
		recorded := ev.GetUsageRecorded()
		if recorded.GetModel() != sonnet || recorded.GetProvider() != wayfindv1.Provider_PROVIDER_ANTHROPIC ||
			recorded.GetInputTokens() != wantInput || recorded.GetOutputTokens() != 7 {
			t.Errorf("usage_recorded = %v, want model %s, provider anthropic, input %d, output 7", recorded, sonnet, wantInput)
		}
		if recorded.CostUsd == nil || recorded.GetCostUsd() <= 0 {
			t.Errorf("usage_recorded = %v, want a cost_usd", recorded)
		}
		if ev.GetId() <= lastID {
			t.Errorf("event id %d not after %d", ev.GetId(), lastID)
		}
		lastID = ev.GetId()
	}
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("watch after cancel: got %v, want CANCELED", err)
	}
}

// testAgentFlow is one agent turn: register a deferred catalog, render, search, resolve the tool
// the model called (watching its activation event), render again.
func testAgentFlow(t *testing.T, conn *grpc.ClientConn) {
	tools := wayfindv1.NewToolDiscoveryServiceClient(conn)
	caller := tenant(t)
	const refund = "billing.refund_payment"

	// 1. RegisterTools, the example's catalog, for this test's tenant. Registering it again is a no-op.
	register := &wayfindv1.RegisterToolsRequest{Caller: caller, Source: "example", Namespace: "billing", Tools: billingTools(), ReplaceSource: true}
	first, err := tools.RegisterTools(rpcContext(t), register)
	if err != nil {
		t.Fatalf("RegisterTools: %v", err)
	}
	if n := first.GetAdded() + first.GetUpdated() + first.GetUnchanged(); n != 3 || first.GetRemoved() != 0 {
		t.Errorf("RegisterTools = %v, want 3 tools and none removed", first)
	}
	again, err := tools.RegisterTools(rpcContext(t), register)
	if err != nil {
		t.Fatalf("RegisterTools again: %v", err)
	}
	if again.GetUnchanged() != 3 || again.GetCatalogFingerprint() != first.GetCatalogFingerprint() {
		t.Errorf("RegisterTools again = %v, want 3 unchanged and fingerprint %s", again, first.GetCatalogFingerprint())
	}

	// 2. The first render: the deferred billing tools are counted, not shown.
	render := func() *wayfindv1.RenderToolPromptResponse {
		t.Helper()
		resp, err := tools.RenderToolPrompt(rpcContext(t), &wayfindv1.RenderToolPromptRequest{Caller: caller})
		if err != nil {
			t.Fatalf("RenderToolPrompt: %v", err)
		}
		return resp
	}
	before := render()
	if len(before.GetVisibleTools()) == 0 || slices.ContainsFunc(before.GetVisibleTools(), func(n string) bool { return strings.HasPrefix(n, "billing.") }) {
		t.Errorf("visible_tools = %v, want the always-loaded tools and no billing tool", before.GetVisibleTools())
	}
	if before.GetDeferredCount() < 3 || !strings.Contains(before.GetText(), fmt.Sprintf("%d deferred tools", before.GetDeferredCount())) {
		t.Errorf("deferred_count = %d, want at least the 3 billing tools, stated in the text:\n%s", before.GetDeferredCount(), before.GetText())
	}

	// 3. SearchTools: the billing tool ranks first.
	found, err := tools.SearchTools(rpcContext(t), &wayfindv1.SearchToolsRequest{Caller: caller, Query: "refund a payment", Limit: 5})
	if err != nil {
		t.Fatalf("SearchTools: %v", err)
	}
	matches := found.GetTools()
	if len(matches) == 0 || matches[0].GetName() != refund || matches[0].GetLoadingMode() != wayfindv1.LoadingMode_LOADING_MODE_DEFERRED {
		t.Fatalf("SearchTools(refund a payment) = %v, want %s (deferred) first", matches, refund)
	}
	for i, m := range matches {
		if m.GetScore() < 0 || m.GetScore() > 1 || (i > 0 && m.GetScore() > matches[i-1].GetScore()) {
			t.Errorf("match %d %s has score %v, want in [0,1] and in descending order", i, m.GetName(), m.GetScore())
		}
	}

	// 4. Watch the session, then resolve: the first use activates the tool and emits tool_activated.
	watchCtx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	events, err := tools.WatchToolEvents(watchCtx, &wayfindv1.WatchToolEventsRequest{
		Caller: caller,
		Filter: &wayfindv1.EventFilter{
			EventTypes: []wayfindv1.EventType{wayfindv1.EventType_EVENT_TYPE_TOOL_ACTIVATED},
			SessionId:  caller.GetSessionId(),
			Tool:       refund,
		},
	})
	if err != nil {
		t.Fatalf("WatchToolEvents: %v", err)
	}
	if msg, err := events.Recv(); err != nil || msg.GetStatus() == nil {
		t.Fatalf("WatchToolEvents first message: got (%v, %v), want a status", msg, err)
	}
	resolved, err := tools.ResolveTool(rpcContext(t), &wayfindv1.ResolveToolRequest{Caller: caller, Name: refund})
	if err != nil {
		t.Fatalf("ResolveTool(%s): %v", refund, err)
	}
	if !resolved.GetActivated() || resolved.GetScope() != wayfindv1.ActivationScope_ACTIVATION_SCOPE_RUN {
		t.Errorf("ResolveTool: activated=%t scope=%v, want a run-scoped activation", resolved.GetActivated(), resolved.GetScope())
	}
	def := resolved.GetTool()
	if def.GetName() != refund || def.GetSource() != "example" || len(def.GetExamples()) != 1 ||
		def.GetArgsSchema().GetFields()["properties"].GetStructValue().GetFields()["payment_id"] == nil {
		t.Errorf("ResolveTool definition = %v, want %s from source example with its schema and example", def, refund)
	}
	var ev *wayfindv1.Event
	for ev == nil {
		msg, err := events.Recv() // bounded by watchCtx
		if err != nil {
			t.Fatalf("WatchToolEvents: no tool_activated event: %v", err)
		}
		ev = msg.GetEvent() // nil for a status or heartbeat
	}
	activated := ev.GetToolActivated()
	if activated.GetTool() != refund || activated.GetScope() != wayfindv1.ToolActivated_SCOPE_RUN ||
		activated.GetSource() != wayfindv1.ToolActivated_SOURCE_RESOLVE {
		t.Errorf("tool_activated = %v, want %s, scope run, source resolve", activated, refund)
	}
	if ev.GetEventType() != wayfindv1.EventType_EVENT_TYPE_TOOL_ACTIVATED || ev.GetTenantId() != caller.GetTenantId() ||
		ev.GetSessionId() != caller.GetSessionId() || ev.GetRunId() != caller.GetRunId() {
		t.Errorf("event = %v, want tool_activated for %s/%s/%s", ev, caller.GetTenantId(), caller.GetSessionId(), caller.GetRunId())
	}
	cancel()

	// Only the first use activates.
	if again, err := tools.ResolveTool(rpcContext(t), &wayfindv1.ResolveToolRequest{Caller: caller, Name: refund}); err != nil || again.GetActivated() {
		t.Errorf("ResolveTool again: got (activated=%t, %v), want the definition without a new activation", again.GetActivated(), err)
	}

	// 5. The tool is appended: the previous render is a prefix, and the deferred count is stable.
	after := render()
	if wantTools := append(slices.Clone(before.GetVisibleTools()), refund); !slices.Equal(after.GetVisibleTools(), wantTools) {
		t.Errorf("visible_tools after activation = %v, want %v", after.GetVisibleTools(), wantTools)
	}
	if !strings.HasPrefix(after.GetText(), before.GetText()) || len(after.GetText()) == len(before.GetText()) {
		t.Errorf("the previous prompt is not a strict prefix of the new one:\n--- before\n%s\n--- after\n%s", before.GetText(), after.GetText())
	}
	if after.GetDeferredCount() != before.GetDeferredCount() {
		t.Errorf("deferred_count = %d after activation, want %d (activated deferred tools still count)", after.GetDeferredCount(), before.GetDeferredCount())
	}

	// The activation belongs to the run: another run of the session does not see the tool.
	otherRun := proto.Clone(caller).(*wayfindv1.CallerContext)
	otherRun.RunId = "run-2"
	other, err := tools.RenderToolPrompt(rpcContext(t), &wayfindv1.RenderToolPromptRequest{Caller: otherRun})
	if err != nil {
		t.Fatalf("RenderToolPrompt(run-2): %v", err)
	}
	if !slices.Equal(other.GetVisibleTools(), before.GetVisibleTools()) {
		t.Errorf("visible_tools of another run = %v, want %v", other.GetVisibleTools(), before.GetVisibleTools())
	}
}

func testRelevantSkills(t *testing.T, conn *grpc.ClientConn) {
	const budget = 400
	resp, err := wayfindv1.NewSkillServiceClient(conn).GetRelevantSkills(rpcContext(t), &wayfindv1.GetRelevantSkillsRequest{
		Caller: tenant(t), Task: "the API returns 429 Too Many Requests", TopK: 2, MaxTokens: budget,
	})
	if err != nil {
		t.Fatalf("GetRelevantSkills: %v", err)
	}
	if resp.GetFormattedContext() == "" || len(resp.GetSkillNames()) == 0 || resp.GetSkillNames()[0] != "http.retry_backoff" {
		t.Fatalf("GetRelevantSkills = %v, want a block led by http.retry_backoff", resp)
	}
	if resp.GetTokenEstimate() <= 0 || resp.GetTokenEstimate() > budget {
		t.Errorf("token_estimate = %d, want within the budget of %d", resp.GetTokenEstimate(), budget)
	}
	for _, name := range resp.GetSkillNames() {
		if !strings.Contains(resp.GetFormattedContext(), name) {
			t.Errorf("formatted_context does not contain skill %s:\n%s", name, resp.GetFormattedContext())
		}
	}
}

func testDiscoveryTools(t *testing.T, conn *grpc.ClientConn) {
	resp, err := wayfindv1.NewToolDiscoveryServiceClient(conn).GetDiscoveryTools(rpcContext(t), &wayfindv1.GetDiscoveryToolsRequest{
		Caller: tenant(t), IncludeSkillTools: true,
	})
	if err != nil {
		t.Fatalf("GetDiscoveryTools: %v", err)
	}
	var names []string
	for _, tool := range resp.GetTools() {
		names = append(names, tool.GetName())
		schema := tool.GetArgsSchema().AsMap()
		if _, ok := schema["properties"].(map[string]any); schema["type"] != "object" || !ok || tool.GetDescription() == "" {
			t.Errorf("%s: description %q, args_schema %v, want a description and an object schema with properties", tool.GetName(), tool.GetDescription(), schema)
		}
	}
	if want := []string{"tool_search", "tool_get", "skill_search", "skill_get", "skill_list"}; !slices.Equal(names, want) {
		t.Errorf("GetDiscoveryTools = %v, want %v", names, want)
	}
	// tool_search takes a required query.
	search := resp.GetTools()[0].GetArgsSchema()
	if req := search.GetFields()["required"].GetListValue().AsSlice(); !slices.Contains(req, any("query")) {
		t.Errorf("tool_search required = %v, want query", req)
	}
}

func testToolErrors(t *testing.T, conn *grpc.ClientConn) {
	tools := wayfindv1.NewToolDiscoveryServiceClient(conn)
	caller := tenant(t)
	_, err := tools.ResolveTool(rpcContext(t), &wayfindv1.ResolveToolRequest{Caller: caller, Name: "billing.no_such_tool"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("ResolveTool(unknown): got %v, want NOT_FOUND", err)
	}
	noSession := &wayfindv1.CallerContext{TenantId: caller.GetTenantId(), RunId: "run-1"}
	_, err = tools.ActivateTools(rpcContext(t), &wayfindv1.ActivateToolsRequest{
		Caller: noSession, Names: []string{"github.create_issue"}, Scope: wayfindv1.ActivationScope_ACTIVATION_SCOPE_SESSION,
	})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("session-scoped ActivateTools without session_id: got %v, want FAILED_PRECONDITION", err)
	}
}

// testReportToolOutcome reports what became of a tool chosen from a search: a hit of a search the
// server remembers teaches the ranking, a retry with the same key is a duplicate, and a tool that
// does not exist is NOT_FOUND.
func testReportToolOutcome(t *testing.T, conn *grpc.ClientConn) {
	tools := wayfindv1.NewToolDiscoveryServiceClient(conn)
	caller := tenant(t)
	const refund = "billing.refund_payment"
	if _, err := tools.RegisterTools(rpcContext(t), &wayfindv1.RegisterToolsRequest{
		Caller: caller, Source: "example", Namespace: "billing", Tools: billingTools(), ReplaceSource: true,
	}); err != nil {
		t.Fatalf("RegisterTools: %v", err)
	}
	found, err := tools.SearchTools(rpcContext(t), &wayfindv1.SearchToolsRequest{Caller: caller, Query: "refund a payment", Limit: 5})
	if err != nil {
		t.Fatalf("SearchTools: %v", err)
	}
	if found.GetSearchId() == "" || len(found.GetTools()) == 0 || found.GetTools()[0].GetName() != refund {
		t.Fatalf("SearchTools(refund a payment) = %v, want a search_id and %s first", found, refund)
	}

	report := &wayfindv1.ReportToolOutcomeRequest{
		Caller:         caller,
		SearchId:       found.GetSearchId(),
		Tool:           refund,
		Outcome:        wayfindv1.Outcome_OUTCOME_SUCCEEDED,
		Note:           "refunded pay_123",
		IdempotencyKey: "outcome-1",
	}
	first, err := tools.ReportToolOutcome(rpcContext(t), report)
	if err != nil {
		t.Fatalf("ReportToolOutcome: %v", err)
	}
	if !first.GetLearned() || first.GetDuplicate() {
		t.Errorf("ReportToolOutcome = {learned:%t duplicate:%t}, want {learned:true duplicate:false} for a hit of search %s",
			first.GetLearned(), first.GetDuplicate(), found.GetSearchId())
	}

	// A retry (same key) is acknowledged and teaches nothing again.
	retry, err := tools.ReportToolOutcome(rpcContext(t), report)
	if err != nil {
		t.Fatalf("ReportToolOutcome retry: %v", err)
	}
	if !retry.GetDuplicate() || retry.GetLearned() {
		t.Errorf("ReportToolOutcome retry = {learned:%t duplicate:%t}, want {learned:false duplicate:true}", retry.GetLearned(), retry.GetDuplicate())
	}

	// A tool that does not exist is NOT_FOUND, exactly as one the caller may not see.
	unknown := proto.Clone(report).(*wayfindv1.ReportToolOutcomeRequest)
	unknown.Tool = "billing.no_such_tool"
	unknown.IdempotencyKey = "outcome-2"
	if _, err := tools.ReportToolOutcome(rpcContext(t), unknown); status.Code(err) != codes.NotFound {
		t.Errorf("ReportToolOutcome(unknown tool): got %v, want NOT_FOUND", err)
	}
}

// testBadRequestDetails decodes the google.rpc.BadRequest an invalid RegisterTools fails with: one
// field violation per invalid tool, named by its place in the request.
func testBadRequestDetails(t *testing.T, conn *grpc.ClientConn) {
	_, err := wayfindv1.NewToolDiscoveryServiceClient(conn).RegisterTools(rpcContext(t), &wayfindv1.RegisterToolsRequest{
		Caller: tenant(t),
		Source: "go-details",
		Tools: []*wayfindv1.Tool{
			{Name: "details.fine", Description: "A valid tool."},
			{Name: "details.bad name!", Description: "Spaces and '!' are not allowed in names."},
			{Name: "details.what?", Description: "'?' is not allowed either."},
		},
	})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("RegisterTools(two invalid tools): got %v, want INVALID_ARGUMENT", err)
	}
	var fields []string
	for _, detail := range st.Details() {
		if badRequest, ok := detail.(*errdetails.BadRequest); ok {
			for _, violation := range badRequest.GetFieldViolations() {
				fields = append(fields, violation.GetField())
				if !strings.Contains(violation.GetDescription(), "details.") {
					t.Errorf("violation of %s says %q, want it to name the tool", violation.GetField(), violation.GetDescription())
				}
			}
		}
	}
	if !slices.Equal(fields, []string{"tools[1]", "tools[2]"}) {
		t.Errorf("BadRequest fields = %v, want [tools[1] tools[2]]", fields)
	}
}

// testExample runs the example itself against the server.
// testConsumer runs the event consumer (consumer.go) through a burst of events, stops it in the
// middle, lets the burst go on while it is down, restarts it from its state file, and requires
// figures that count every event exactly once.
func testConsumer(t *testing.T, conn *grpc.ClientConn) {
	const burst = 40 // usage records and activations each; the consumer stops after about a third
	caller := tenant(t)
	statePath := filepath.Join(t.TempDir(), "figures.json")
	tools := wayfindv1.NewToolDiscoveryServiceClient(conn)
	usage := wayfindv1.NewUsageServiceClient(conn)
	skills := wayfindv1.NewSkillServiceClient(conn)
	relevant := &wayfindv1.GetRelevantSkillsRequest{Caller: caller, Task: "the API returns 429 Too Many Requests", TopK: 2}
	first, err := skills.GetRelevantSkills(rpcContext(t), relevant)
	if err != nil || len(first.GetSkillNames()) == 0 {
		t.Fatalf("GetRelevantSkills: %v, %v", first, err)
	}
	perCall := uint64(len(first.GetSkillNames()))
	if _, err := tools.RegisterTools(rpcContext(t), &wayfindv1.RegisterToolsRequest{
		Caller: caller, Source: "consumer", Namespace: "billing", Tools: billingTools(), ReplaceSource: true,
	}); err != nil {
		t.Fatalf("RegisterTools: %v", err)
	}
	start := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		live := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- consume(ctx, conn, caller, statePath, func() { close(live) }) }()
		select {
		case <-live:
		case err := <-done:
			t.Fatalf("consumer ended before it was live: %v", err)
		case <-time.After(rpcTimeout):
			t.Fatal("consumer not live in time")
		}
		var once sync.Once
		return func() {
			once.Do(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("consumer: %v", err)
				}
			})
		}
	}
	event := func(i int) {
		run := proto.Clone(caller).(*wayfindv1.CallerContext)
		run.RunId = fmt.Sprintf("consumer-run-%d", i)
		if _, err := tools.ActivateTools(rpcContext(t), &wayfindv1.ActivateToolsRequest{
			Caller: run, Names: []string{"billing.refund_payment"},
		}); err != nil {
			t.Fatalf("ActivateTools: %v", err)
		}
		if _, err := usage.RecordUsage(rpcContext(t), &wayfindv1.RecordUsageRequest{
			Caller: run, Provider: wayfindv1.Provider_PROVIDER_ANTHROPIC, Model: sonnet,
			Usage: &wayfindv1.Usage{InputTokens: 100, OutputTokens: 10}, IdempotencyKey: fmt.Sprintf("consumer-%d", i),
		}); err != nil {
			t.Fatalf("RecordUsage: %v", err)
		}
		if _, err := skills.GetRelevantSkills(rpcContext(t), relevant); err != nil {
			t.Fatalf("GetRelevantSkills: %v", err)
		}
	}

	stop := start()
	for i := 0; i < burst; i++ {
		if i == burst/3 {
			stop() // mid-burst: events keep coming while the consumer is down
		}
		event(i)
	}
	stop = start()
	defer stop()
	var figures Figures
	deadline := time.Now().Add(rpcTimeout)
	for time.Now().Before(deadline) {
		state, err := loadState(statePath)
		if err != nil {
			t.Fatal(err)
		}
		figures = state.Figures
		if figures.TokensByModel[sonnet] >= burst*110 && figures.ActivationsByTool["billing.refund_payment"] >= burst {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // anything counted twice would arrive now
	stop()
	if state, err := loadState(statePath); err == nil {
		figures = state.Figures
	}
	if got := figures.ActivationsByTool["billing.refund_payment"]; got != burst {
		t.Errorf("activations of billing.refund_payment = %d, want %d (each run once)", got, burst)
	}
	if got := figures.TokensByModel[sonnet]; got != burst*110 {
		t.Errorf("tokens of %s = %d, want %d: events lost or counted twice", sonnet, got, burst*110)
	}
	// The first GetRelevantSkills came before the consumer's first start: it replays it too.
	var byTaskType uint64
	for _, n := range figures.SkillsByTaskType {
		byTaskType += n
	}
	if want := (burst + 1) * perCall; figures.SkillsRetrieved != want || byTaskType != want {
		t.Errorf("skills retrieved = %d (by task type %v), want %d", figures.SkillsRetrieved, figures.SkillsByTaskType, want)
	}
	if figures.CostUSDByModel[sonnet] <= 0 {
		t.Errorf("cost of %s = %v, want > 0", sonnet, figures.CostUSDByModel[sonnet])
	}
}

// TestWayfindOverTLS runs the example against a server that needs TLS and an API key (made with
// `wayfind keys create`), as one on a network is run.
func TestWayfindOverTLS(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	tlsDir := filepath.Join(root, "test", "fixtures", "tls")
	// The demo's catalogs and skills, served over TLS to key holders only.
	config := writeDemoConfig(t, root, dataDir, fmt.Sprintf(`
server: {tls: {cert_file: %q, key_file: %q}}
auth: {allow_unauthenticated: false}
`, filepath.Join(tlsDir, "server.pem"), filepath.Join(tlsDir, "server-key.pem")))
	keys := exec.Command("node", "bin/wayfind.js", "keys", "create", "--tenant", "acme",
		"--role", "agent", "--role", "observer", "--role", "admin", "--data-dir", dataDir)
	keys.Dir = root
	secret, err := keys.Output()
	if err != nil {
		t.Fatalf("wayfind keys create: %v", err)
	}
	srv := startServer(t, "--config", config, "--data-dir", dataDir)
	ca := filepath.Join(tlsDir, "ca.pem")
	addr := strings.Replace(srv.addr, "127.0.0.1", "localhost", 1) // the name the certificate has

	t.Run("Example", func(t *testing.T) {
		testExample(t, addr, connection{caFile: ca, apiKey: strings.TrimSpace(string(secret))})
	})
	t.Run("NoKeyIsUnauthenticated", func(t *testing.T) {
		conn, err := dial(addr, connection{caFile: ca})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, err = wayfindv1.NewToolDiscoveryServiceClient(conn).ListTools(rpcContext(t), &wayfindv1.ListToolsRequest{})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("ListTools without a key: got %v, want UNAUTHENTICATED", err)
		}
	})
	t.Run("PlaintextIsRefused", func(t *testing.T) {
		conn, err := dial(addr, connection{})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, err = wayfindv1.NewToolDiscoveryServiceClient(conn).ListTools(rpcContext(t), &wayfindv1.ListToolsRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Errorf("ListTools over plaintext to a TLS port: got %v, want UNAVAILABLE", err)
		}
	})
	srv.stop(t)
}

// writeDemoConfig writes dir/wayfind.yaml: the demo's catalogs, MCP server and skills (its paths
// and the MCP server's folder made absolute) and then extra, and returns its path.
func writeDemoConfig(t *testing.T, root, dir, extra string) string {
	t.Helper()
	demo, err := os.ReadFile(filepath.Join(root, "demo", "wayfind.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "wayfind.yaml")
	demoDir := filepath.Join(root, "demo")
	yaml := strings.ReplaceAll(string(demo), "path: ", "path: "+demoDir+"/")
	yaml = strings.ReplaceAll(yaml, "cwd: .", "cwd: "+demoDir) + extra
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// TestCallTool runs a tool of an MCP server through wayfind: the server starts
// @modelcontextprotocol/server-everything over stdio (and stops it when it stops), lists its tools as
// everything.*, and CallTool forwards the call and returns the result unchanged.
func TestCallTool(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	everything := filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(everything); err != nil {
		t.Fatalf("the MCP server of this test: %v (run npm ci)", err)
	}
	dataDir := t.TempDir()
	config := writeDemoConfig(t, root, dataDir, "")
	// One more server in the demo's list of MCP servers.
	written, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	server := fmt.Sprintf("  - {name: everything, transport: stdio, command: node, args: [%q, stdio]}\n", everything)
	if err := os.WriteFile(config, []byte(strings.Replace(string(written), "mcp_servers:\n", "mcp_servers:\n"+server, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "--config", config, "--data-dir", dataDir)
	conn, err := grpc.NewClient(srv.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient(%s): %v", srv.addr, err)
	}
	defer conn.Close()
	tools := wayfindv1.NewToolDiscoveryServiceClient(conn)
	caller := tenant(t)
	args := jsonStruct(`{"message": "hi"}`)

	// The server waits for the MCP server's tools before it listens, but a slow machine may outwait
	// that: the tool is NOT_FOUND until the first sync.
	var called *wayfindv1.CallToolResponse
	for deadline := time.Now().Add(startTimeout); ; time.Sleep(200 * time.Millisecond) {
		called, err = tools.CallTool(rpcContext(t), &wayfindv1.CallToolRequest{Caller: caller, Name: "everything.echo", Arguments: args})
		if status.Code(err) != codes.NotFound || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("CallTool(everything.echo): %v\n%s", err, srv.output())
	}
	content := make([]any, 0, len(called.GetContent()))
	for _, block := range called.GetContent() {
		content = append(content, block.AsMap())
	}
	got, _ := json.Marshal(content)
	if string(got) != `[{"text":"Echo: hi","type":"text"}]` || called.GetIsError() {
		t.Errorf("CallTool(everything.echo) = content %s, is_error %t; want [{type: text, text: \"Echo: hi\"}], false", got, called.GetIsError())
	}
	if called.GetTool() != "everything.echo" || called.GetSource() != "mcp:everything" {
		t.Errorf("CallTool(everything.echo) ran %s of %s, want everything.echo of mcp:everything", called.GetTool(), called.GetSource())
	}

	// Arguments that do not fit the tool's schema are not sent: INVALID_ARGUMENT says what to repair.
	_, err = tools.CallTool(rpcContext(t), &wayfindv1.CallToolRequest{Caller: caller, Name: "everything.echo", Arguments: jsonStruct(`{}`)})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "message") {
		t.Errorf("CallTool(everything.echo, {}): got %v, want INVALID_ARGUMENT naming message", err)
	}
	// A tool of a catalog is the runtime's to run.
	_, err = tools.CallTool(rpcContext(t), &wayfindv1.CallToolRequest{
		Caller: caller, Name: "github.create_issue", Arguments: jsonStruct(`{"owner": "o", "repo": "r", "title": "t"}`),
	})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("CallTool(github.create_issue): got %v, want FAILED_PRECONDITION", err)
	}

	// The dispatch runtime: the model's tool_call of an MCP tool goes to CallTool and the content back
	// to the model; a catalog tool is the runtime's own (this one has no implementation of it).
	rt := dispatchRuntime{tools: tools, caller: caller}
	for _, c := range []struct {
		input string
		want  toolResult // isError: content is part of the error result
	}{
		{`{"name": "everything.echo", "arguments": {"message": "hi"}}`, toolResult{"Echo: hi", false}},
		{`{"name": "everything.echo", "arguments": {}}`, toolResult{"message", true}},
		{`{"name": "github.create_issue", "arguments": {"owner": "o", "repo": "r", "title": "t"}}`, toolResult{"cannot run here", true}},
	} {
		got, err := rt.handle(rpcContext(t), modelCall{"tool_call", c.input})
		if err != nil {
			t.Fatalf("tool_call %s: %v", c.input, err)
		}
		if got != c.want && !(got.isError && c.want.isError && strings.Contains(got.content, c.want.content)) {
			t.Errorf("tool_call %s = %+v, want %+v", c.input, got, c.want)
		}
	}

	// Last: SIGTERM drains the server (and stops the MCP server it started), which must exit 0.
	srv.stop(t)
}

func testExample(t *testing.T, addr string, c connection) {
	lines := runExample(t, addr, c, agentTurn, []string{
		"health: SERVING",
		"recorded: cost $0.011250",
		"summary: 1 calls",
		"registered: ",
		"prompt: ",
		"search: billing.refund_payment ",
		"resolved: billing.refund_payment (activated=true)",
		"event: tool_activated billing.refund_payment (scope run, source resolve)",
		"outcome: billing.refund_payment succeeded (learned=true, duplicate=false)",
		"prompt: ",
		"skills: http.retry_backoff",
	})
	if !strings.HasSuffix(lines[9], ", billing.refund_payment (previous prompt is a prefix: true)") {
		t.Errorf("line 10 = %q, want billing.refund_payment appended to a stable prefix", lines[9])
	}
	// What README.md shows is what the example prints (a search's score follows the ranking: not compared).
	if got, want := maskScores(lines), maskScores(readmeSample(t)); !slices.Equal(got, want) {
		t.Errorf("the example printed\n%s\nbut README.md shows\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var scoreText = regexp.MustCompile(`\(score \d\.\d\d\)`)

func maskScores(lines []string) []string {
	masked := make([]string, len(lines))
	for i, line := range lines {
		masked[i] = scoreText.ReplaceAllString(line, "(score …)")
	}
	return masked
}

// readmeSample is the example's output as README.md "Run" shows it: the plain block after the commands.
func readmeSample(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, run, _ := strings.Cut(string(readme), "## Run")
	blocks := strings.SplitN(run, "```\n", 4)
	if len(blocks) < 3 {
		t.Fatalf("README.md has no output block under \"## Run\"")
	}
	sample, _, _ := strings.Cut(blocks[2], "```")
	return strings.Split(strings.TrimSpace(sample), "\n")
}

// The dispatch runtime loop: the model's bad call comes back as an error naming the field to fix, the
// repaired call runs and activates the tool, and the tools array does not change.
func testDispatchExample(t *testing.T, addr string) {
	lines := runExample(t, addr, connection{}, dispatchLoop, []string{
		"health: SERVING",
		"payload: ",
		"tool_search -> result: billing.refund_payment: ",
		`tool_get -> result: [{"description":"Refund a captured payment`,
		"tool_call -> error: ",
		`tool_call -> result: {"amount_cents":500,"payment_id":"pay_123","refund_id":"re_1"} (activated=true)`,
		"tools array and system prompt byte-identical after the activation: true",
	})
	if !strings.HasSuffix(lines[1], "discovery: tool_call, tool_get, tool_search") {
		t.Errorf("line 2 = %q, want the dispatch payload's discovery tools", lines[1])
	}
	for _, fix := range []string{"payment_id", "amount_cents"} {
		if !strings.Contains(lines[4], fix) {
			t.Errorf("repair message %q does not name %s", lines[4], fix)
		}
	}
}

// runExample runs one walk-through and checks that its output lines start with want, one each.
func runExample(t *testing.T, addr string, c connection, walk walkThrough, want []string) []string {
	t.Helper()
	var out strings.Builder
	if err := run(addr, c, walk, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("example printed %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, prefix := range want {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], prefix)
		}
	}
	return lines
}

// server is a wayfind server process started for the tests.
type server struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{} // closed when the process has exited
	err  error         // exit error, valid after done
	mu   sync.Mutex
	logs bytes.Buffer // stdout and stderr, for failure messages
}

func (s *server) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.Write(p)
}

func (s *server) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// startServer runs `wayfind serve --port 0` with extra flags (default: the demo, in a temp folder).
func startServer(t *testing.T, flags ...string) *server {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the wayfind server: %v", err)
	}
	s := &server{done: make(chan struct{})}
	if len(flags) == 0 {
		flags = []string{"--data-dir", t.TempDir()}
	}
	s.cmd = exec.Command(node, append([]string{"bin/wayfind.js", "serve", "--port", "0"}, flags...)...)
	s.cmd.Dir = root
	s.cmd.Stderr = s
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start server: %v", err)
	}

	port := make(chan int, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 64*1024), 1024*1024)
		found := false
		for scanner.Scan() {
			line := scanner.Bytes()
			_, _ = s.Write(append(line, '\n'))
			if found {
				continue
			}
			var entry struct {
				Msg  string `json:"msg"`
				Port int    `json:"port"`
			}
			if json.Unmarshal(line, &entry) == nil && entry.Msg == "listening" && entry.Port > 0 {
				found = true
				port <- entry.Port
			}
		}
		_, _ = io.Copy(s, stdout)
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	// Whatever happens, never leave the server running.
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})

	select {
	case p := <-port:
		s.addr = fmt.Sprintf("127.0.0.1:%d", p)
		return s
	case <-s.done:
		t.Fatalf("server exited before listening (%v):\n%s", s.err, s.output())
	case <-time.After(startTimeout):
		t.Fatalf("server did not log \"listening\" within %s:\n%s", startTimeout, s.output())
	}
	return nil
}

// stop sends SIGTERM and requires a clean exit (status 0) within stopTimeout.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-s.done:
		if s.err != nil {
			t.Errorf("server exited with %v after SIGTERM, want status 0:\n%s", s.err, s.output())
		}
	case <-time.After(stopTimeout):
		t.Fatalf("server still running %s after SIGTERM:\n%s", stopTimeout, s.output())
	}
}
