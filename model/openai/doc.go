// Package openai is the model.Provider for OpenAI's Chat Completions API and for every
// server that speaks it (Ollama, vLLM, the llama.cpp server, OpenRouter, …). It speaks
// the wire format itself, with net/http and encoding/json: the one endpoint it calls
// does not need the official SDK, whose root package alone added 20 MB to the binary
// and over a millisecond of package initialisation to every start of the process.
//
// Invariants:
//   - Every call streams ("stream": true with "stream_options": {"include_usage": true})
//     and returns a response only when the stream carried a finish_reason and ended with
//     "data: [DONE]"; anything less is model.malformed_stream, never a partial response
//     presented as complete.
//   - Every error Stream returns is a *sema.Error with one of the model.Code* codes and
//     a sentence saying what to change. A cancelled ctx yields model.cancelled wrapping
//     ctx.Err(); nothing panics on any input the server can send.
//   - Transient failures (408, 409, 429, 5xx, connection errors before the response
//     started; a response's x-should-retry header overrides its status) are retried
//     with backoff that honours retry-after and retry-after-ms, up to Config.MaxRetries
//     times in all; 400, 401, 403 and 404 are not. A wait the server
//     advises beyond Config.MaxRetryAfter (60 s) is not waited out: the call fails at
//     once (429: model.rate_limited; 5xx keeps its code) with the advice in the detail
//     (retry_after_seconds).
//   - A stream cut mid-response (the connection broke, the stream ended without
//     "data: [DONE]", or it went silent for Config.StreamIdleTimeout), a transient
//     error the server reported inside the stream, and a server that sends no first
//     byte within Config.FirstByteTimeout (60 s for the official API) are transient
//     too, retried in the same budget: the request is idempotent. Deltas already
//     delivered stay delivered; a retried attempt delivers none, so onDelta never sees
//     a text twice, and the returned Response, the retried attempt's, is the authority.
//     A stream whose content breaks the wire format is not retried.
//   - Once the retries are spent, a stalled server fails the call with model.network,
//     so it cannot hang a run.
//   - A redirect to another origin (scheme, host, port) is refused and not retried:
//     the request carries the API key and the conversation.
//   - New reads no environment variable; FromEnv is the one place that does.
//
// Translation to the wire format:
//   - The system prompt is a "system" message. Thinking blocks are not sent (Chat
//     Completions has no field for them).
//   - Each tool_result block becomes its own "tool" message carrying tool_call_id; tool
//     messages are placed before the rest of the user message, because the API requires
//     them right after the assistant message that made the calls. Their text is the
//     result's text blocks; an image becomes the text "[image omitted]" (tool messages
//     cannot carry images); an error result is prefixed with "Error: ".
//   - Images in user content become image_url parts with data: URLs.
//   - Tool inputs are sent as the arguments string verbatim (an empty input as "{}").
//   - Request.MaxTokens (zero: DefaultMaxTokens) is sent as max_completion_tokens to
//     api.openai.com, whose newer models refuse max_tokens, and as max_tokens to every
//     other server, since that is the field all of them understand.
//
// Assembly of the stream:
//   - A tool-call delta belongs to the call with its index; without an index, to the
//     call with its id; without either, to the last call. It starts a new call instead
//     when none matches, when its id differs from that call's, or when it names a
//     different function, or the same one again with new arguments after the call's
//     arguments already form complete JSON (servers that reuse index 0 for every
//     call). Whole calls in one chunk, ids sent once or on every delta, and arguments
//     sent as an object rather than a string are all read.
//   - A call the server sent without an id gets a generated one ("call_" and 26 random
//     characters), assigned once.
//   - Empty arguments become {}. Arguments that are not valid JSON become a JSON string
//     holding the text the model sent: the transcript keeps what the model said, and
//     the engine answers the call with tool.input_invalid (the input is not an object)
//     without running anything.
//   - finish_reason stop → end_turn (tool_use when the response made tool calls, as
//     some servers say "stop" then), tool_calls → tool_use, length → max_tokens,
//     content_filter → refusal. A response that streamed a refusal stops with refusal.
//   - Usage: InputTokens is prompt_tokens minus the cached and cache-written tokens
//     (the uncached input, as model.Usage counts it for every provider);
//     prompt_tokens_details.cached_tokens → CacheReadTokens, cache_write_tokens →
//     CacheWriteTokens, completion_tokens → OutputTokens.
//   - Reasoning text that compatible servers stream as delta.reasoning_content or
//     delta.reasoning becomes a thinking block (and DeltaThinking increments).
package openai
