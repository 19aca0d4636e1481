package main

// The event consumer: `go run . consume -state figures.json` watches wayfind's three event streams
// and keeps the figures an operator wants (activations per tool, zero-result searches, skills
// retrieved per task type, cost and tokens per model) in a state file together with each stream's
// cursor. The
// file is replaced atomically after every event, so a consumer stopped at any point (Ctrl-C,
// kill -9, a lost connection) resumes after the last event it counted: none lost, none twice.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	wayfindv1 "github.com/wayfind-dev/wayfind/gen/go/wayfind/v1"
	"google.golang.org/grpc"
)

// Figures are what the consumer aggregates.
type Figures struct {
	ActivationsByTool  map[string]uint64  `json:"activations_by_tool"`
	ToolSearches       uint64             `json:"tool_searches"`
	ZeroResultSearches uint64             `json:"zero_result_searches"`
	SkillsRetrieved    uint64             `json:"skills_retrieved"`
	SkillsByTaskType   map[string]uint64  `json:"skills_retrieved_by_task_type"`
	CostUSDByModel     map[string]float64 `json:"cost_usd_by_model"`
	TokensByModel      map[string]uint64  `json:"tokens_by_model"`
}

// consumerState is the state file: the figures and, per stream, the id of the last event counted.
type consumerState struct {
	Cursors map[string]uint64 `json:"cursors"`
	Figures Figures           `json:"figures"`
}

// eventStream is one watch stream, opened after a cursor.
type eventStream func(ctx context.Context, filter *wayfindv1.EventFilter) (func() (*wayfindv1.Event, error), error)

func loadState(path string) (*consumerState, error) {
	state := &consumerState{Cursors: map[string]uint64{}, Figures: Figures{
		ActivationsByTool: map[string]uint64{}, SkillsByTaskType: map[string]uint64{},
		CostUSDByModel: map[string]float64{}, TokensByModel: map[string]uint64{},
	}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return state, nil
	}
	if err != nil {
		return nil, err
	}
	return state, json.Unmarshal(data, state)
}

// save replaces the state file atomically: a crash leaves the old file or the new one.
func (s *consumerState) save(path string) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".consumer-state-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// count adds one event to the figures.
func (f *Figures) count(ev *wayfindv1.Event) {
	switch p := ev.GetPayload().(type) {
	case *wayfindv1.Event_ToolActivated:
		f.ActivationsByTool[p.ToolActivated.GetTool()]++
	case *wayfindv1.Event_ToolSearchQuery:
		f.ToolSearches++
		if p.ToolSearchQuery.GetResultCount() == 0 {
			f.ZeroResultSearches++
		}
	case *wayfindv1.Event_SkillsRetrieved:
		f.SkillsRetrieved += uint64(p.SkillsRetrieved.GetSkillCount())
		for _, taskType := range p.SkillsRetrieved.GetTaskTypes() {
			f.SkillsByTaskType[taskType]++
		}
	case *wayfindv1.Event_UsageRecorded:
		u := p.UsageRecorded
		f.CostUSDByModel[u.GetModel()] += u.GetCostUsd()
		f.TokensByModel[u.GetModel()] += u.GetInputTokens() + u.GetOutputTokens() +
			u.GetCacheReadInputTokens() + u.GetCacheCreationInputTokens()
	}
}

// consume watches the tool, skill and usage streams for caller's tenant until ctx ends, counting
// each event into the state file at statePath. live is called once all three streams are open.
func consume(ctx context.Context, conn *grpc.ClientConn, caller *wayfindv1.CallerContext, statePath string, live func()) error {
	state, err := loadState(statePath)
	if err != nil {
		return fmt.Errorf("read %s: %w", statePath, err)
	}
	tools := wayfindv1.NewToolDiscoveryServiceClient(conn)
	skills := wayfindv1.NewSkillServiceClient(conn)
	usage := wayfindv1.NewUsageServiceClient(conn)
	streams := map[string]eventStream{
		"tools": func(ctx context.Context, f *wayfindv1.EventFilter) (func() (*wayfindv1.Event, error), error) {
			s, err := tools.WatchToolEvents(ctx, &wayfindv1.WatchToolEventsRequest{Caller: caller, Filter: f})
			return func() (*wayfindv1.Event, error) { m, err := s.Recv(); return m.GetEvent(), err }, err
		},
		"skills": func(ctx context.Context, f *wayfindv1.EventFilter) (func() (*wayfindv1.Event, error), error) {
			s, err := skills.WatchSkillEvents(ctx, &wayfindv1.WatchSkillEventsRequest{Caller: caller, Filter: f})
			return func() (*wayfindv1.Event, error) { m, err := s.Recv(); return m.GetEvent(), err }, err
		},
		"usage": func(ctx context.Context, f *wayfindv1.EventFilter) (func() (*wayfindv1.Event, error), error) {
			s, err := usage.WatchUsageEvents(ctx, &wayfindv1.WatchUsageEventsRequest{Caller: caller, Filter: f})
			return func() (*wayfindv1.Event, error) { m, err := s.Recv(); return m.GetEvent(), err }, err
		},
	}
	var mu sync.Mutex // one event at a time changes the figures and the file
	var opened sync.WaitGroup
	opened.Add(len(streams))
	go func() { opened.Wait(); live() }()
	errs := make(chan error, len(streams))
	for name, open := range streams {
		go func() {
			mu.Lock()
			after := state.Cursors[name]
			mu.Unlock()
			// A first start replays what the server retains; a restart resumes after its cursor.
			next, err := open(ctx, &wayfindv1.EventFilter{AfterId: after, FromOldest: after == 0})
			if err == nil {
				_, err = next() // the status: the stream is live
			}
			opened.Done()
			for err == nil {
				var ev *wayfindv1.Event
				if ev, err = next(); err != nil || ev == nil { // nil: a status or heartbeat
					continue
				}
				mu.Lock()
				state.Figures.count(ev)
				state.Cursors[name] = ev.GetId()
				err = state.save(statePath)
				mu.Unlock()
			}
			errs <- fmt.Errorf("%s events: %w", name, err)
		}()
	}
	err = <-errs
	if ctx.Err() != nil {
		return nil // stopped on purpose
	}
	return err
}
