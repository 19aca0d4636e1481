// Command wayfind-example is the smallest useful wayfind client: it checks that the server is up,
// records the token usage of one model call and prints the tenant's usage summary.
//
//	go run . -addr 127.0.0.1:50051
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	wayfindv1 "github.com/wayfind-dev/wayfind/gen/go/wayfind/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "wayfind server address (host:port)")
	flag.Parse()

	// wayfind speaks plaintext HTTP/2 (h2c); put TLS and authentication in front of it in production.
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	defer conn.Close()

	// Every call gets a deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	health, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		log.Fatalf("health check: %v", err)
	}
	fmt.Println("health:", health.GetStatus())

	// Who is asking. wayfind trusts this as sent: run it behind a boundary that sets it.
	caller := &wayfindv1.CallerContext{TenantId: "acme", SessionId: "session-1", RunId: "run-1"}

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
		log.Fatalf("record usage: %v", err)
	}
	if recorded.CostUsd != nil {
		fmt.Printf("recorded: cost $%.6f (duplicate=%t)\n", recorded.GetCostUsd(), recorded.GetDuplicate())
	} else {
		fmt.Printf("recorded: cost unknown (%s)\n", recorded.GetUnknownCostReason())
	}

	summary, err := usage.GetUsageSummary(ctx, &wayfindv1.GetUsageSummaryRequest{Caller: caller})
	if err != nil {
		log.Fatalf("usage summary: %v", err)
	}
	t := summary.GetTotals()
	fmt.Printf("summary: %d calls, $%.6f, cache hit rate %.1f%%\n",
		t.GetCalls(), t.GetTotalCostUsd(), 100*t.GetCacheHitRate())

	// Tool and skill discovery go through the same connection, e.g.
	//   tools := wayfindv1.NewToolDiscoveryServiceClient(conn)
	//   skills := wayfindv1.NewSkillServiceClient(conn)
}
