// Command wayfind-example is a small wayfind client. It checks that the server is up, records the
// token usage of one model call, then walks through one agent turn of tool and skill discovery:
// register a deferred catalog, render the tool prompt, search, resolve the tool the model called
// (seeing its activation event), report that it succeeded, render again and fetch the skills
// relevant to the task.
//
//	go run . -addr 127.0.0.1:50051
//	go run . -addr wayfind.internal:50051 -ca ca.pem -api-key "$WAYFIND_API_KEY"
//	go run . consume -addr 127.0.0.1:50051 -tenant acme -state figures.json   (consumer.go)
//	go run . dispatch -addr 127.0.0.1:50051   (dispatch.go: the dispatch-mode runtime loop)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	wayfindv1 "github.com/wayfind-dev/wayfind/gen/go/wayfind/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// connection says how to reach the server: TLS (trusting caFile; "" = plaintext on loopback) and
// the API key sent with every call ("" = none, for a local server that allows it).
type connection struct {
	caFile string
	apiKey string
}

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "wayfind server address (host:port)")
	ca := flag.String("ca", "", "PEM file of the CA that signed the server's certificate (enables TLS)")
	apiKey := flag.String("api-key", os.Getenv("WAYFIND_API_KEY"), "API key (default $WAYFIND_API_KEY)")
	// `consume`: the event consumer of consumer.go; `dispatch`: the runtime loop of dispatch.go.
	mode := ""
	if len(os.Args) > 1 && (os.Args[1] == "consume" || os.Args[1] == "dispatch") {
		mode = os.Args[1]
		os.Args = append(os.Args[:1], os.Args[2:]...)
	}
	statePath := flag.String("state", "wayfind-figures.json", "consume: the state file (figures and cursors)")
	tenantID := flag.String("tenant", "acme", "consume: the tenant whose events to count (a key's own without it)")
	flag.Parse()
	c := connection{caFile: *ca, apiKey: *apiKey}
	if mode != "consume" {
		walk := agentTurn
		if mode == "dispatch" {
			walk = dispatchLoop
		}
		if err := run(*addr, c, walk, os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	conn, err := dial(*addr, c)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	caller := &wayfindv1.CallerContext{TenantId: *tenantID}
	live := func() { log.Printf("watching; figures in %s", *statePath) }
	if err := consume(ctx, conn, caller, *statePath, live); err != nil {
		log.Fatal(err)
	}
}

// bearerKey sends `authorization: Bearer <key>` with every call, only over TLS.
type bearerKey string

func (k bearerKey) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(k)}, nil
}

func (bearerKey) RequireTransportSecurity() bool { return true }

// dial connects as c says: TLS with the API key, or plaintext HTTP/2 (h2c) for a local server.
func dial(addr string, c connection) (*grpc.ClientConn, error) {
	if c.caFile == "" {
		return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	tls, err := credentials.NewClientTLSFromFile(c.caFile, "")
	if err != nil {
		return nil, fmt.Errorf("load CA %s: %w", c.caFile, err)
	}
	options := []grpc.DialOption{grpc.WithTransportCredentials(tls)}
	if c.apiKey != "" {
		options = append(options, grpc.WithPerRPCCredentials(bearerKey(c.apiKey)))
	}
	return grpc.NewClient(addr, options...)
}

// walkThrough is one example: what it does with a connected client, writing to out.
type walkThrough func(ctx context.Context, conn *grpc.ClientConn, caller *wayfindv1.CallerContext, out io.Writer) error

// run connects, checks the server's health and runs walk as an agent run of tenant acme.
func run(addr string, c connection, walk walkThrough, out io.Writer) error {
	conn, err := dial(addr, c)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()

	// Every call gets a deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	health, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	fmt.Fprintln(out, "health:", health.GetStatus())

	// Who is asking. With an API key the key decides the tenant (another one is refused); without
	// one (a local server) it is trusted as sent. One run id per agent run: run-scoped tool
	// activations belong to it.
	caller := &wayfindv1.CallerContext{
		TenantId:  "acme",
		SessionId: "session-1",
		RunId:     fmt.Sprintf("run-%d", time.Now().UnixNano()),
	}
	return walk(ctx, conn, caller, out)
}

// agentTurn is the default example: usage accounting, then one agent turn of discovery.
func agentTurn(ctx context.Context, conn *grpc.ClientConn, caller *wayfindv1.CallerContext, out io.Writer) error {
	if err := recordUsage(ctx, conn, caller, out); err != nil {
		return err
	}
	return discover(ctx, conn, caller, out)
}

func recordUsage(ctx context.Context, conn *grpc.ClientConn, caller *wayfindv1.CallerContext, out io.Writer) error {
	usage := wayfindv1.NewUsageServiceClient(conn)
	recorded, err := usage.RecordUsage(ctx, &wayfindv1.RecordUsageRequest{
		Caller:   caller,
		Provider: wayfindv1.Provider_PROVIDER_ANTHROPIC,
		Model:    "claude-sonnet-4-5-20250929",
		Usage: &wayfindv1.Usage{
			InputTokens:          1200,
			OutputTokens:         350,
			CacheReadInputTokens: 8000,
		},
		// One key per model call (e.g. the provider's response id): retries are counted once.
		IdempotencyKey: fmt.Sprintf("example-%d", time.Now().UnixNano()),
	})
	if err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	if recorded.CostUsd != nil {
		fmt.Fprintf(out, "recorded: cost $%.6f (duplicate=%t)\n", recorded.GetCostUsd(), recorded.GetDuplicate())
	} else {
		fmt.Fprintf(out, "recorded: cost unknown (%s)\n", recorded.GetUnknownCostReason())
	}

	summary, err := usage.GetUsageSummary(ctx, &wayfindv1.GetUsageSummaryRequest{Caller: caller})
	if err != nil {
		return fmt.Errorf("usage summary: %w", err)
	}
	t := summary.GetTotals()
	fmt.Fprintf(out, "summary: %d calls, $%.6f, cache hit rate %.1f%%\n",
		t.GetCalls(), t.GetTotalCostUsd(), 100*t.GetCacheHitRate())
	return nil
}

func discover(ctx context.Context, conn *grpc.ClientConn, caller *wayfindv1.CallerContext, out io.Writer) error {
	tools := wayfindv1.NewToolDiscoveryServiceClient(conn)

	// 1. Register a catalog at runtime for the caller's tenant (only that tenant sees it; unchanged
	// input is a no-op, so do it on every start).
	reg, err := tools.RegisterTools(ctx, &wayfindv1.RegisterToolsRequest{
		Caller: caller, Source: "example", Namespace: "billing", Tools: billingTools(), ReplaceSource: true,
	})
	if err != nil {
		return fmt.Errorf("register tools: %w", err)
	}
	fmt.Fprintf(out, "registered: %d added, %d updated, %d unchanged\n",
		reg.GetAdded(), reg.GetUpdated(), reg.GetUnchanged())

	// 2. The tools block of the system prompt: visible tools, and how to find the deferred ones.
	before, err := tools.RenderToolPrompt(ctx, &wayfindv1.RenderToolPromptRequest{Caller: caller})
	if err != nil {
		return fmt.Errorf("render prompt: %w", err)
	}
	fmt.Fprintf(out, "prompt: %d tools visible, %d deferred\n", len(before.GetVisibleTools()), before.GetDeferredCount())

	// 3. The model calls tool_search.
	found, err := tools.SearchTools(ctx, &wayfindv1.SearchToolsRequest{
		Caller: caller, Query: "refund a payment", Limit: 3,
	})
	if err != nil {
		return fmt.Errorf("search tools: %w", err)
	}
	if len(found.GetTools()) == 0 {
		return errors.New("search tools: no match")
	}
	best := found.GetTools()[0]
	fmt.Fprintf(out, "search: %s (score %.2f)\n", best.GetName(), best.GetScore())

	// 4. The model calls the tool: ResolveTool returns its definition and activates it for the run.
	// Activations are also streamed as events, e.g. to a dashboard; watch before resolving.
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	events, err := tools.WatchToolEvents(watchCtx, &wayfindv1.WatchToolEventsRequest{
		Caller: caller,
		Filter: &wayfindv1.EventFilter{
			EventTypes: []wayfindv1.EventType{wayfindv1.EventType_EVENT_TYPE_TOOL_ACTIVATED},
			SessionId:  caller.GetSessionId(),
			Tool:       best.GetName(),
		},
	})
	if err != nil {
		return fmt.Errorf("watch tool events: %w", err)
	}
	if _, err := events.Recv(); err != nil { // a status comes first: the stream is live
		return fmt.Errorf("watch tool events: %w", err)
	}
	resolved, err := tools.ResolveTool(ctx, &wayfindv1.ResolveToolRequest{Caller: caller, Name: best.GetName()})
	if err != nil {
		return fmt.Errorf("resolve tool: %w", err)
	}
	fmt.Fprintf(out, "resolved: %s (activated=%t)\n", resolved.GetTool().GetName(), resolved.GetActivated())
	for resolved.GetActivated() {
		msg, err := events.Recv()
		if err != nil {
			return fmt.Errorf("watch tool events: %w", err)
		}
		ev := msg.GetEvent() // nil for a status or heartbeat
		if activated := ev.GetToolActivated(); ev.GetRunId() == caller.GetRunId() && activated != nil {
			fmt.Fprintf(out, "event: %s %s (scope %s, source %s)\n", ev.GetType(), activated.GetTool(),
				enumName(activated.GetScope().String(), "SCOPE_"), enumName(activated.GetSource().String(), "SOURCE_"))
			break
		}
	}
	stopWatching()

	// 5. The runtime ran the tool and it did what the request needed: report it, naming the search
	// the tool came from, so the tenant's ranking learns from the choice. One key per report (e.g.
	// the model's tool call id): a retried report is acknowledged and recorded once.
	outcome := wayfindv1.Outcome_OUTCOME_SUCCEEDED
	reported, err := tools.ReportToolOutcome(ctx, &wayfindv1.ReportToolOutcomeRequest{
		Caller:         caller,
		SearchId:       found.GetSearchId(),
		Tool:           best.GetName(),
		Outcome:        outcome,
		Note:           "refunded pay_123",
		IdempotencyKey: fmt.Sprintf("outcome-%d", time.Now().UnixNano()),
	})
	if err != nil {
		return fmt.Errorf("report tool outcome: %w", err)
	}
	fmt.Fprintf(out, "outcome: %s %s (learned=%t, duplicate=%t)\n",
		best.GetName(), enumName(outcome.String(), "OUTCOME_"), reported.GetLearned(), reported.GetDuplicate())

	// 6. Render again: the tool is appended, so the previous prompt stays a prefix (cache hits).
	after, err := tools.RenderToolPrompt(ctx, &wayfindv1.RenderToolPromptRequest{Caller: caller})
	if err != nil {
		return fmt.Errorf("render prompt: %w", err)
	}
	fmt.Fprintf(out, "prompt: %s (previous prompt is a prefix: %t)\n",
		strings.Join(after.GetVisibleTools(), ", "), strings.HasPrefix(after.GetText(), before.GetText()))

	// 7. Before working on a task: the relevant skills as one block to inject, within a token budget.
	const budget = 500
	relevant, err := wayfindv1.NewSkillServiceClient(conn).GetRelevantSkills(ctx, &wayfindv1.GetRelevantSkillsRequest{
		Caller: caller, Task: "the API returns 429 Too Many Requests", TopK: 2, MaxTokens: budget,
	})
	if err != nil {
		return fmt.Errorf("relevant skills: %w", err)
	}
	fmt.Fprintf(out, "skills: %s (%d of %d tokens)\n",
		strings.Join(relevant.GetSkillNames(), ", "), relevant.GetTokenEstimate(), budget)
	return nil
}

// enumName is an enum value's name as the event log writes it: SCOPE_RUN → run.
func enumName(name, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(name, prefix))
}

// billingTools is a small catalog. Deferred tools stay out of the prompt until the model finds
// them with tool_search or calls them; args are JSON Schema, examples teach the argument shapes.
func billingTools() []*wayfindv1.Tool {
	tool := func(name, description string, effect wayfindv1.SideEffect, schema, example string) *wayfindv1.Tool {
		return &wayfindv1.Tool{
			Name:        name,
			Description: description,
			SideEffect:  effect,
			LoadingMode: wayfindv1.LoadingMode_LOADING_MODE_DEFERRED,
			ArgsSchema:  jsonStruct(schema),
			Examples:    []*wayfindv1.ToolExample{{Args: jsonStruct(example)}},
		}
	}
	return []*wayfindv1.Tool{
		tool("refund_payment", "Refund a captured payment, in full or in part.",
			wayfindv1.SideEffect_SIDE_EFFECT_WRITE,
			`{"type": "object", "required": ["payment_id"], "properties": {
				"payment_id": {"type": "string"},
				"amount_cents": {"type": "integer", "minimum": 1}}}`,
			`{"payment_id": "pay_123", "amount_cents": 500}`),
		tool("get_invoice", "Fetch an invoice with its line items.",
			wayfindv1.SideEffect_SIDE_EFFECT_READ,
			`{"type": "object", "required": ["invoice_id"], "properties": {
				"invoice_id": {"type": "string"}}}`,
			`{"invoice_id": "in_42"}`),
		tool("list_subscriptions", "List a customer's subscriptions and their status.",
			wayfindv1.SideEffect_SIDE_EFFECT_READ,
			`{"type": "object", "required": ["customer_id"], "properties": {
				"customer_id": {"type": "string"},
				"active_only": {"type": "boolean"}}}`,
			`{"customer_id": "cus_7", "active_only": true}`),
	}
}

// jsonStruct parses a JSON object literal into a Struct.
func jsonStruct(json string) *structpb.Struct {
	s := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(json), s); err != nil {
		panic(err)
	}
	return s
}
