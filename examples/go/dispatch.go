package main

// The dispatch-mode runtime loop: `go run . dispatch` shows the model a tools array that never
// changes (the discovery tools, `tool_call` and the always-visible tools) and routes every call of a
// deferred tool through `tool_call {name, arguments}`. The runtime checks each such call with
// CheckToolCall: a valid one runs the tool (and activates it on first use), an invalid one goes back
// to the model as an error result that says what to fix. A tool wayfind got from an MCP server (source
// `mcp:<server>`) is executed by wayfind with CallTool; any other the runtime runs itself. Because the
// tools array stays byte-identical, an activation never re-writes the provider's prompt cache.
//
// A real agent gets the model's tool calls from the provider's response; this example replays a
// fixed script of them so that it runs without a model.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	wayfindv1 "github.com/wayfind-dev/wayfind/gen/go/wayfind/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// modelCall is one tool call as the model sends it: a tool of the payload and its JSON input.
type modelCall struct {
	tool  string
	input string
}

// dispatchScript is what a model typically does: search, load the definition, call it (first with
// arguments that do not fit, then repaired after reading the error).
var dispatchScript = []modelCall{
	{"tool_search", `{"query": "refund a payment", "limit": 3}`},
	{"tool_get", `{"names": ["billing.refund_payment"]}`},
	{"tool_call", `{"name": "billing.refund_payment", "arguments": {"amount_cents": 0}}`},
	{"tool_call", `{"name": "billing.refund_payment", "arguments": {"payment_id": "pay_123", "amount_cents": 500}}`},
}

// toolResult is what goes back to the model for one call (Anthropic: a tool_result block).
type toolResult struct {
	content string
	isError bool
}

// implementations are the tools this runtime can execute, by wayfind name. wayfind finds, checks and
// activates tools; running them is the runtime's job, except for the tools of MCP servers (CallTool).
var implementations = map[string]func(args map[string]any) (string, error){
	"billing.refund_payment": func(args map[string]any) (string, error) {
		out, err := json.Marshal(map[string]any{"refund_id": "re_1", "payment_id": args["payment_id"], "amount_cents": args["amount_cents"]})
		return string(out), err
	},
}

// dispatchRuntime answers the model's tool calls with wayfind.
type dispatchRuntime struct {
	tools  wayfindv1.ToolDiscoveryServiceClient
	caller *wayfindv1.CallerContext
}

// dispatchLoop registers the billing catalog and replays dispatchScript through the runtime.
func dispatchLoop(ctx context.Context, conn *grpc.ClientConn, caller *wayfindv1.CallerContext, out io.Writer) error {
	rt := dispatchRuntime{tools: wayfindv1.NewToolDiscoveryServiceClient(conn), caller: caller}
	if _, err := rt.tools.RegisterTools(ctx, &wayfindv1.RegisterToolsRequest{
		Caller: caller, Source: "example", Namespace: "billing", Tools: billingTools(), ReplaceSource: true,
	}); err != nil {
		return fmt.Errorf("register tools: %w", err)
	}

	before, err := rt.render(ctx)
	if err != nil {
		return err
	}
	names, err := payloadToolNames(before.payload)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "payload: %d tools, discovery: %s\n", len(names), strings.Join(discoveryNames(names), ", "))

	for _, call := range dispatchScript {
		result, err := rt.handle(ctx, call)
		if err != nil {
			return fmt.Errorf("%s: %w", call.tool, err)
		}
		kind := "result"
		if result.isError {
			kind = "error"
		}
		fmt.Fprintf(out, "%s -> %s: %s\n", call.tool, kind, strings.ReplaceAll(result.content, "\n", " | "))
	}

	after, err := rt.render(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "tools array and system prompt byte-identical after the activation: %t\n", after == before)
	return nil
}

// rendered is what the session sends before the conversation: the tools array and the system prompt.
type rendered struct {
	payload string
	prompt  string
}

// render asks for both in dispatch mode: neither changes when a tool is activated, so the
// provider's cache of everything after them (the conversation) is never re-written.
func (rt dispatchRuntime) render(ctx context.Context) (rendered, error) {
	payload, err := rt.tools.RenderToolPayload(ctx, &wayfindv1.RenderToolPayloadRequest{
		Caller: rt.caller, Provider: wayfindv1.Provider_PROVIDER_ANTHROPIC, Dispatch: true,
	})
	if err != nil {
		return rendered{}, fmt.Errorf("render payload: %w", err)
	}
	prompt, err := rt.tools.RenderToolPrompt(ctx, &wayfindv1.RenderToolPromptRequest{Caller: rt.caller, Dispatch: true})
	if err != nil {
		return rendered{}, fmt.Errorf("render prompt: %w", err)
	}
	return rendered{payload.GetPayloadJson(), prompt.GetText()}, nil
}

// handle answers one tool call. An error is for the runtime (wayfind unreachable); what the model
// should read and act on is a toolResult, with isError when its call needs repair.
func (rt dispatchRuntime) handle(ctx context.Context, call modelCall) (toolResult, error) {
	input := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(call.input), input); err != nil {
		return toolResult{"the input is not a JSON object: " + err.Error(), true}, nil
	}
	args := input.GetFields()
	switch call.tool {
	case "tool_search":
		found, err := rt.tools.SearchTools(ctx, &wayfindv1.SearchToolsRequest{
			Caller: rt.caller, Query: args["query"].GetStringValue(), Limit: int32(args["limit"].GetNumberValue()),
		})
		if err != nil {
			return modelError(err)
		}
		lines := make([]string, 0, len(found.GetTools()))
		for _, t := range found.GetTools() {
			lines = append(lines, fmt.Sprintf("%s: %s", t.GetName(), t.GetDescription()))
		}
		return toolResult{content: strings.Join(lines, "\n")}, nil
	case "tool_get":
		var names []string
		for _, v := range args["names"].GetListValue().GetValues() {
			names = append(names, v.GetStringValue())
		}
		got, err := rt.tools.GetTools(ctx, &wayfindv1.GetToolsRequest{
			Caller: rt.caller, Names: names, IncludeSchemas: true, IncludeExamples: true,
		})
		if err != nil {
			return modelError(err)
		}
		// The definitions enter the conversation here, not the tools array.
		definitions, err := json.Marshal(toolDefinitions(got.GetTools()))
		return toolResult{content: string(definitions)}, err
	case "tool_call":
		return rt.dispatch(ctx, args["name"].GetStringValue(), args["arguments"].GetStructValue())
	default:
		return toolResult{fmt.Sprintf("no tool named %q", call.tool), true}, nil
	}
}

// dispatch checks a tool_call with wayfind and runs the tool when its arguments fit: wayfind executes
// the tools of MCP servers, the runtime the others.
func (rt dispatchRuntime) dispatch(ctx context.Context, name string, arguments *structpb.Struct) (toolResult, error) {
	checked, err := rt.tools.CheckToolCall(ctx, &wayfindv1.CheckToolCallRequest{
		Caller: rt.caller, Name: name, Arguments: arguments,
	})
	if err != nil {
		return modelError(err)
	}
	if !checked.GetValid() {
		return toolResult{checked.GetRepairMessage(), true}, nil
	}
	if strings.HasPrefix(checked.GetTool().GetSource(), "mcp:") {
		return rt.callTool(ctx, name, arguments)
	}
	run, ok := implementations[checked.GetTool().GetName()]
	if !ok {
		return toolResult{fmt.Sprintf("%s cannot run here; use another tool", name), true}, nil
	}
	result, err := run(arguments.AsMap())
	if err != nil {
		return toolResult{err.Error(), true}, nil
	}
	return toolResult{content: fmt.Sprintf("%s (activated=%t)", result, checked.GetActivated())}, nil
}

// callTool has wayfind execute a tool of an MCP server (CallTool forwards `tools/call` upstream) and
// gives the model the result as the server sent it; a failure the tool reports (is_error) is the
// model's to read.
func (rt dispatchRuntime) callTool(ctx context.Context, name string, arguments *structpb.Struct) (toolResult, error) {
	called, err := rt.tools.CallTool(ctx, &wayfindv1.CallToolRequest{Caller: rt.caller, Name: name, Arguments: arguments})
	if err != nil {
		return modelError(err)
	}
	return toolResult{contentText(called.GetContent()), called.GetIsError()}, nil
}

// contentText is a result's content blocks as this runtime's string results carry them: the text of
// each text block, any other block (image, audio, resource) as its JSON.
func contentText(blocks []*structpb.Struct) string {
	parts := make([]string, 0, len(blocks))
	for _, block := range blocks {
		if text := block.GetFields()["text"]; block.GetFields()["type"].GetStringValue() == "text" {
			parts = append(parts, text.GetStringValue())
			continue
		}
		encoded, _ := json.Marshal(block.AsMap()) // a Struct always encodes
		parts = append(parts, string(encoded))
	}
	return strings.Join(parts, "\n")
}

// modelError turns what the model can fix (a tool that does not exist for it, bad search input) into
// an error result for it, and anything else into an error for the runtime.
func modelError(err error) (toolResult, error) {
	switch status.Code(err) {
	case codes.NotFound, codes.InvalidArgument:
		return toolResult{status.Convert(err).Message(), true}, nil
	}
	return toolResult{}, err
}

// toolDefinitions is what tool_get returns to the model: name, description, input schema, examples.
func toolDefinitions(tools []*wayfindv1.Tool) []map[string]any {
	definitions := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		examples := make([]any, 0, len(t.GetExamples()))
		for _, e := range t.GetExamples() {
			examples = append(examples, e.GetArgs().AsMap())
		}
		definitions = append(definitions, map[string]any{
			"name": t.GetName(), "description": t.GetDescription(),
			"input_schema": t.GetArgsSchema().AsMap(), "examples": examples,
		})
	}
	return definitions
}

// payloadToolNames lists the tool names of an Anthropic tools array.
func payloadToolNames(payloadJSON string) ([]string, error) {
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(payloadJSON), &tools); err != nil {
		return nil, fmt.Errorf("payload is not a tools array: %w", err)
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names, nil
}

// discoveryNames picks wayfind's discovery tools out of a payload's tool names, sorted.
func discoveryNames(names []string) []string {
	var picked []string
	for _, n := range names {
		if n == "tool_search" || n == "tool_get" || n == "tool_call" {
			picked = append(picked, n)
		}
	}
	sort.Strings(picked)
	return picked
}
