package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// The link states of LinkInfo.State.
const (
	// LinkOpen: the question waits and the link may decide it.
	LinkOpen = "open"
	// LinkUsed: the link decided its question; it decides nothing more.
	LinkUsed = "used"
	// LinkExpired: the link's time ran out before it was used.
	LinkExpired = "expired"
	// LinkRevoked: the question was decided another way (the API, another link) or its
	// task was cancelled.
	LinkRevoked = "revoked"
)

// LinkRequest is the body of POST /v1/checkpoints/{id}/link.
type LinkRequest struct {
	// ExpiresIn is how many seconds the link stays usable (0: 600).
	ExpiresIn int `json:"expires_in,omitempty"`
}

// Link is a single-use approval link: whoever opens URL may decide the question once,
// without a token, until ExpiresAt.
type Link struct {
	// URL is the console's page for the link, absolute (/approve/TOKEN).
	URL string `json:"url"`
	// ExpiresAt is when the link stops working.
	ExpiresAt time.Time `json:"expires_at"`
}

// LinkInfo is what GET /v1/links/{token} tells whoever holds the link: the question
// while the link is open, and the link's state.
type LinkInfo struct {
	// State is open, used, expired or revoked.
	State string `json:"state"`
	// TaskID and SessionID are the task and session that wait for the question.
	TaskID string `json:"task_id"`
	// SessionID: see TaskID.
	SessionID string `json:"session_id"`
	// Tool is the parked call's tool (while open).
	Tool string `json:"tool,omitempty"`
	// Input is the call's arguments exactly as they run when allowed (while open).
	Input json.RawMessage `json:"input,omitempty"`
	// Gate is the kind of question: tool_permission or plan_review (while open).
	Gate string `json:"gate,omitempty"`
	// Message is the question's sentence (while open).
	Message string `json:"message,omitempty"`
	// ExpiresAt is when the link stops working.
	ExpiresAt time.Time `json:"expires_at"`
}

// LinkDecision is the body of POST /v1/links/{token}/decision.
type LinkDecision struct {
	// Decision is allow or deny.
	Decision string `json:"decision"`
	// Message is the person's sentence; on a deny the model sees it.
	Message string `json:"message,omitempty"`
}

// CreateLink makes a single-use approval link for an open checkpoint, usable for
// expiresIn (0: ten minutes). A decided checkpoint is an *Error with
// checkpoint.already_claimed.
func (c *Client) CreateLink(ctx context.Context, checkpointID string, expiresIn time.Duration) (*Link, error) {
	var out Link
	in := LinkRequest{ExpiresIn: int(expiresIn / time.Second)}
	return &out, c.do(ctx, http.MethodPost, "/v1/checkpoints/"+url.PathEscape(checkpointID)+"/link", in, &out)
}

// OpenLink reads a link's question and state; it needs no token and decides nothing.
func (c *Client) OpenLink(ctx context.Context, token string) (*LinkInfo, error) {
	var out LinkInfo
	return &out, c.do(ctx, http.MethodGet, "/v1/links/"+url.PathEscape(token), nil, &out)
}

// DecideLink decides a link's question, once. A used link is an *Error with link.used
// (409), an expired one link.expired (410), one whose question was decided another way
// link.revoked (409).
func (c *Client) DecideLink(ctx context.Context, token string, d LinkDecision) (*LinkInfo, error) {
	var out LinkInfo
	return &out, c.do(ctx, http.MethodPost, "/v1/links/"+url.PathEscape(token)+"/decision", d, &out)
}
