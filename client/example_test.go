package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sema-agent/sema/client"
)

// fakeService answers the few routes of `sema serve`'s API the examples call, with the
// service's JSON shapes, for one task t1 of session s1 whose leg parks on a question
// (checkpoint cp1) and, once allowed, completes.
func fakeService() http.Handler {
	events := []string{
		`{"type":"system","subtype":"init","session_id":"s1","manifest":{}}`,
		`{"type":"tool_use","turn":1,"id":"call_1","name":"Bash","input":{"command":"go test ./..."}}`,
		`{"type":"tool_result","turn":1,"tool_use_id":"call_1","name":"Bash","is_error":false,"content":"ok"}`,
		`{"type":"result","session_id":"s1","status":"completed","result":"The tests pass.","num_turns":2}`,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tasks", func(w http.ResponseWriter, r *http.Request) {
		var spec client.TaskSpec
		if json.NewDecoder(r.Body).Decode(&spec) != nil || spec.Prompt == "" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"code":"request.invalid","message":"a task needs a prompt"}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"task_id":"t1","session_id":"s1","status":"queued"}`)
	})
	mux.HandleFunc("GET /v1/tasks/t1/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, data := range events {
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, data)
		}
	})
	mux.HandleFunc("GET /v1/checkpoints", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"checkpoints":[{"id":"cp1","task_id":"t1","session_id":"s1","tool":"Bash",`+
			`"input":{"command":"go test ./..."},"input_sha256":"…","gate":"tool_permission",`+
			`"message":"Allow this command?","status":"open"}]}`)
	})
	mux.HandleFunc("POST /v1/checkpoints/cp1/decision", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"task_id":"t1","session_id":"s1","status":"queued"}`)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"code":"request.not_found","message":"no such task","request_id":"r1"}`)
	})
	// Every route needs the bearer token.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer example-token" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"code":"auth.unauthorized","message":"send a valid bearer token"}`)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Submit a task and follow its events to the end. Events reconnects by itself after a
// dropped connection, from the last event received.
func ExampleClient_SubmitTask() {
	svc := httptest.NewServer(fakeService())
	defer svc.Close()
	ctx := context.Background()

	c := client.New(svc.URL, "example-token")
	task, err := c.SubmitTask(ctx, client.TaskSpec{Prompt: "make the tests pass", PermissionMode: "acceptEdits"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.TaskID, task.Status)

	for ev, err := range c.Events(ctx, task.TaskID, 0) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if call, ok := ev.ToolUse(); ok {
			fmt.Printf("%d %s %s %s\n", ev.ID, ev.Type, call.Name, call.Input)
			continue
		}
		if r, ok := ev.Result(); ok {
			fmt.Printf("%d %s %s %q\n", ev.ID, ev.Type, r.Status, r.Result)
			continue
		}
		fmt.Println(ev.ID, ev.Type)
	}
	// Output:
	// t1 queued
	// 1 system
	// 2 tool_use Bash {"command":"go test ./..."}
	// 3 tool_result
	// 4 result completed "The tests pass."
}

// A parked question waits for a decision over the API; the first decision claims it.
func ExampleClient_Decide() {
	svc := httptest.NewServer(fakeService())
	defer svc.Close()
	ctx := context.Background()
	c := client.New(svc.URL, "example-token")

	open, err := c.Checkpoints(ctx, "open")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, cp := range open {
		fmt.Println(cp.ID, cp.Tool, cp.Message)
		task, err := c.Decide(ctx, cp.ID, client.Decision{Decision: "allow"})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("resumed:", task.TaskID, task.Status)
	}
	// Output:
	// cp1 Bash Allow this command?
	// resumed: t1 queued
}

// Every error answer is an *Error with a stable code to branch on.
func ExampleError() {
	svc := httptest.NewServer(fakeService())
	defer svc.Close()
	ctx := context.Background()

	_, err := client.New(svc.URL, "example-token").Task(ctx, "t404")
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code)
	}

	_, err = client.New(svc.URL, "wrong-token").Task(ctx, "t1")
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code)
	}
	// Output:
	// 404 request.not_found
	// 401 auth.unauthorized
}
