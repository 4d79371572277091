package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// TaskFilter chooses the page of GET /v1/tasks: zero values take everything, 50 at a
// time, from the newest.
type TaskFilter struct {
	// Statuses keeps only tasks with one of these statuses (queued, running,
	// awaiting_approval or a result status); empty keeps all.
	Statuses []string
	// Limit is the page's size, 1 to 500 (0: 50).
	Limit int
	// Before is the Next of the previous page: the page after it.
	Before string
}

// TaskList is a page of the tenant's tasks, newest first.
type TaskList struct {
	// Tasks are the page's tasks, each with its prompt.
	Tasks []Task `json:"tasks"`
	// Next is the cursor of the following page (TaskFilter.Before); empty on the last.
	Next string `json:"next,omitempty"`
}

// Tasks lists the tenant's tasks, newest first (GET /v1/tasks). A status word the
// service does not know, or a limit out of range, is an *Error with request.invalid.
func (c *Client) Tasks(ctx context.Context, f TaskFilter) (*TaskList, error) {
	q := url.Values{}
	if len(f.Statuses) > 0 {
		q.Set("status", strings.Join(f.Statuses, ","))
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Before != "" {
		q.Set("before", f.Before)
	}
	path := "/v1/tasks"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out TaskList
	return &out, c.do(ctx, http.MethodGet, path, nil, &out)
}
