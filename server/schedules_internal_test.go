package server

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
)

// scheduleServers starts n working processes on one store made from cfg (on SQLite,
// one process serves as all n: a second process would not share its queue's pool), with
// a tenant acme, and returns them.
func scheduleServers(t *testing.T, cfg Config, n int) []*Server {
	t.Helper()
	ctx := context.Background()
	turns := make([]scripted.Turn, 200)
	for i := range turns {
		turns[i] = scripted.Turn{Text: "done"}
	}
	p := scripted.New(scripted.Script{Turns: turns})
	cfg.OpenProvider = func(string) (model.Provider, string, error) { return p, "scripted", nil }
	cfg.Poll = 20 * time.Millisecond
	var out []*Server
	for i := range n {
		if i > 0 && cfg.Postgres == "" {
			out = append(out, out[0])
			continue
		}
		s, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			s.Shutdown(sctx)
			s.Close()
		})
		out = append(out, s)
	}
	base, _ := filepath.EvalSymlinks(t.TempDir())
	if _, err := out[0].CreateToken(ctx, "acme", base, TenantConfig{}); err != nil {
		t.Fatal(err)
	}
	return out
}

// scheduleTaskCount counts the tasks schedule id started.
func scheduleTaskCount(t *testing.T, s *Server, id string) int {
	t.Helper()
	var n int
	if err := queryRow(context.Background(), s.b.db(), `SELECT COUNT(*) FROM sema_serve_tasks WHERE schedule_id = ?`, []any{id}, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// dueNow makes schedule id's next tick due at ms and returns it as fireDue reads it.
func dueNow(t *testing.T, s *Server, id string, ms int64) dueSchedule {
	t.Helper()
	ctx := context.Background()
	if _, err := s.b.db().exec(ctx, `UPDATE sema_serve_schedules SET next_ms = ? WHERE id = ?`, ms, id); err != nil {
		t.Fatal(err)
	}
	d := dueSchedule{id: id}
	if err := queryRow(ctx, s.b.db(), `SELECT tenant, cron, task, next_ms FROM sema_serve_schedules WHERE id = ?`, []any{id}, &d.tenant, &d.cron, &d.task, &d.due); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestScheduleTickClaimedOnce: processes that fire the same due tick at the same moment
// start one task between them; the others' claims find the tick moved on and store
// nothing.
func TestScheduleTickClaimedOnce(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		const racers, rounds = 4, 8
		srvs := scheduleServers(t, cfg, racers)
		ctx := context.Background()
		sc, err := srvs[0].AddSchedule(ctx, "acme", "@hourly", client.TaskSpec{Prompt: "tick"})
		if err != nil {
			t.Fatal(err)
		}
		for round := 1; round <= rounds; round++ {
			d := dueNow(t, srvs[0], sc.ID, time.Now().Add(-time.Duration(round)*time.Second).UnixMilli())
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range racers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					srvs[i].fire(ctx, d, time.Now())
				}()
			}
			close(start)
			wg.Wait()
			if n := scheduleTaskCount(t, srvs[0], sc.ID); n != round {
				t.Fatalf("after %d ticks raced by %d processes: %d tasks", round, racers, n)
			}
		}
		list, err := srvs[0].Schedules(ctx, "acme")
		if err != nil || len(list) != 1 || list[0].Fired != rounds || list[0].Refused != 0 {
			t.Fatalf("the schedule after the races: %+v, %v", list, err)
		}
		if !list[0].NextAt.After(time.Now()) {
			t.Fatalf("next_at %s is not ahead", list[0].NextAt)
		}
	})
}

// TestScheduleMissedTicks: a schedule whose ticks were missed while no process ran
// fires once as a process starts (ScheduleCatchUp once, the default), however many
// were missed, or not at all (skip); either way its next tick is ahead.
func TestScheduleMissedTicks(t *testing.T) {
	for _, mode := range []string{"", catchUpSkip} {
		t.Run("catch-up="+cmpOr(mode, "once"), func(t *testing.T) {
			eachStoreInternal(t, func(t *testing.T, cfg Config) {
				ctx := context.Background()
				cfg.ScheduleCatchUp = mode
				cfg.ScheduleMinInterval = time.Second
				// The schedule is made with no working process, then its tick put an hour
				// back: 3600 ticks of @every 1s missed.
				s, err := New(ctx, Config{Home: cfg.Home, Postgres: cfg.Postgres, Logger: cfg.Logger, ScheduleMinInterval: time.Second,
					OpenProvider: func(string) (model.Provider, string, error) { return scripted.New(scripted.Script{}), "scripted", nil }})
				if err != nil {
					t.Fatal(err)
				}
				base, _ := filepath.EvalSymlinks(t.TempDir())
				if _, err := s.CreateToken(ctx, "acme", base, TenantConfig{}); err != nil {
					t.Fatal(err)
				}
				sc, err := s.AddSchedule(ctx, "acme", "@every 1s", client.TaskSpec{Prompt: "tick"})
				if err != nil {
					t.Fatal(err)
				}
				dueNow(t, s, sc.ID, time.Now().Add(-time.Hour).UnixMilli())
				s.Close()

				// The process's first look (as it starts) handles the missed tick; the
				// next is a second after it, so half a second on only that look counts.
				srv := scheduleServers(t, cfg, 1)[0]
				time.Sleep(500 * time.Millisecond)
				rs, err := srv.b.db().query(ctx, `SELECT created_ms FROM sema_serve_tasks WHERE schedule_id = ?`, sc.ID)
				ms, err := collect(rs, err, func(r rows) (int64, error) {
					var v int64
					return v, r.Scan(&v)
				})
				if err != nil {
					t.Fatal(err)
				}
				fired := len(ms)
				list, err := srv.Schedules(ctx, "acme")
				if err != nil || len(list) != 1 {
					t.Fatalf("schedules: %+v, %v", list, err)
				}
				if !list[0].NextAt.After(time.Now().Add(-time.Second)) {
					t.Fatalf("next_at %s is still behind", list[0].NextAt)
				}
				switch mode {
				case catchUpSkip:
					if fired > 0 {
						t.Fatalf("skip: the missed ticks started %d tasks", fired)
					}
				default:
					if fired != 1 {
						t.Fatalf("once: 3600 missed ticks started %d tasks, want 1", fired)
					}
				}
			})
		})
	}
}

// TestScheduleFiringRefusedByLimits: a firing goes through the tenant's limits as a
// submission does — at its concurrency limit, or with its day's tokens spent, the
// firing starts no task, the refusal is recorded with its code, and the tick moves on.
func TestScheduleFiringRefusedByLimits(t *testing.T) {
	eachStoreInternal(t, func(t *testing.T, cfg Config) {
		s := scheduleServers(t, cfg, 1)[0]
		ctx := context.Background()
		sc, err := s.AddSchedule(ctx, "acme", "@hourly", client.TaskSpec{Prompt: "tick"})
		if err != nil {
			t.Fatal(err)
		}
		one, perDay := 1, int64(1000)
		for _, c := range []struct {
			code  string
			setup func()
		}{
			{CodeConcurrencyLimit, func() {
				if err := s.SetLimits(ctx, "acme", &one, nil); err != nil {
					t.Fatal(err)
				}
				// A task queued already holds the one place.
				if _, err := s.b.db().exec(ctx, `INSERT INTO sema_serve_tasks (id, tenant, session_id, kind, spec, status, created_ms, updated_ms) VALUES (?, 'acme', ?, 'run', '{}', 'queued', ?, ?)`,
					newID(), newID(), nowMS(), nowMS()); err != nil {
					t.Fatal(err)
				}
			}},
			{CodeTokenLimit, func() {
				zero := 0
				if err := s.SetLimits(ctx, "acme", &zero, &perDay); err != nil {
					t.Fatal(err)
				}
				if err := recordSpend(ctx, s.b.db(), "acme", perDay, nowMS()); err != nil {
					t.Fatal(err)
				}
			}},
		} {
			c.setup()
			d := dueNow(t, s, sc.ID, nowMS()-1000)
			s.fire(ctx, d, time.Now())
			if n := scheduleTaskCount(t, s, sc.ID); n != 0 {
				t.Fatalf("%s: the refused firing started %d tasks", c.code, n)
			}
			list, err := s.Schedules(ctx, "acme")
			if err != nil || len(list) != 1 || list[0].LastRefusal == nil || list[0].LastRefusal.Code != c.code || !list[0].NextAt.After(time.Now()) {
				t.Fatalf("%s: the schedule after the refusal: %+v, %v", c.code, list, err)
			}
		}
	})
}

// TestScheduleConfigRefusals: the schedule knobs out of range are refused by name.
func TestScheduleConfigRefusals(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{ScheduleCatchUp: "always"}, "ScheduleCatchUp"},
		{Config{ScheduleMinInterval: -time.Second}, "ScheduleMinInterval"},
	} {
		c.cfg.Home = t.TempDir()
		c.cfg.OpenProvider = func(string) (model.Provider, string, error) { return nil, "", nil }
		s, err := New(context.Background(), c.cfg)
		if err == nil {
			s.Close()
		}
		if !sema.IsCode(err, CodeConfigInvalid) || !strings.Contains(sema.MessageOf(err), c.field) {
			t.Fatalf("%s: %v", c.field, err)
		}
	}
}
