package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Schedule is a recurring task of the tenant (POST /v1/schedules): at each time its
// cron expression names, the service submits Task as POST /v1/tasks would, and the task
// carries the schedule's id (Task.ScheduleID).
type Schedule struct {
	// ID names the schedule; the service chooses it.
	ID string `json:"id"`
	// Cron is when it fires, in UTC: five fields (minute hour day-of-month month
	// day-of-week, as in "0 9 * * 1-5"), @every DURATION ("@every 30m"), @hourly,
	// @daily, @weekly, @monthly or @yearly.
	Cron string `json:"cron"`
	// Task is the task each firing submits: the body of POST /v1/tasks.
	Task TaskSpec `json:"task"`
	// NextAt is when it fires next.
	NextAt time.Time `json:"next_at"`
	// CreatedAt is when it was made.
	CreatedAt time.Time `json:"created_at"`
	// Fired counts the firings that submitted a task; LastTaskID is the last one's task.
	Fired int64 `json:"fired"`
	// LastTaskID: see Fired.
	LastTaskID string `json:"last_task_id,omitempty"`
	// LastFiredAt is when a firing last submitted a task.
	LastFiredAt time.Time `json:"last_fired_at,omitzero"`
	// Refused counts the firings refused (the tenant's policy changed since, its
	// concurrency limit or daily tokens reached); LastRefusal is the last one's.
	Refused int64 `json:"refused"`
	// LastRefusal: see Refused.
	LastRefusal *ScheduleRefusal `json:"last_refusal,omitempty"`
}

// ScheduleRefusal is why a schedule's firing submitted no task: the refusal POST
// /v1/tasks would have answered with, and when.
type ScheduleRefusal struct {
	// Code and Message are the refusal's.
	Code string `json:"code"`
	// Message: see Code.
	Message string `json:"message"`
	// At is the time of the firing.
	At time.Time `json:"at"`
}

// AddSchedule creates a schedule of cron and task.
func (c *Client) AddSchedule(ctx context.Context, cron string, task TaskSpec) (*Schedule, error) {
	var out Schedule
	return &out, c.do(ctx, http.MethodPost, "/v1/schedules", map[string]any{"cron": cron, "task": task}, &out)
}

// Schedules lists the tenant's schedules, oldest first.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	var out struct {
		Schedules []Schedule `json:"schedules"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/schedules", nil, &out)
	return out.Schedules, err
}

// RemoveSchedule deletes a schedule: it fires no more (its tasks are kept).
func (c *Client) RemoveSchedule(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/schedules/"+url.PathEscape(id), nil, nil)
}
