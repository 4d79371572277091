// A scripted stand-in for the Anthropic Messages API, for driving an agent
// executable through the Claude Agent SDK without a real model.
//
// It speaks the API's wire format: POST /v1/messages, streamed as server-sent
// events (message_start, ping, content_block_start, content_block_delta with
// text_delta / input_json_delta, content_block_stop, message_delta,
// message_stop) or as one JSON message when the request has no "stream": true,
// and POST /v1/messages/count_tokens.
//
// Each test scripts the answers to the agent's model turns with respond():
//
//   const api = await startFakeAnthropic();
//   api.respond({ text: 'hello' });
//   api.respond({ toolUses: [{ id: 'toolu_1', name: 'Write', input: {...} }] });
//   api.respond({ text: 'slow', hold: true });   // waits for api.release()
//
// A request takes the next scripted answer if it is a turn of the agent's main
// loop. The executable may also make side requests of its own (a title, a
// one-token quota probe, a classification with a small model); those are
// recorded but answered with a plain "ok" and never consume the script. A
// request counts as a side request when it is not streamed or when it asks
// for a different model than the test's (mainModel); Claude Code makes such
// calls with a small model. Unscripted main requests get "ok" as well.
//
// Every request is recorded in api.requests (main and side, in arrival order,
// with the parsed body); api.mainRequests() lists the main ones.

import http from 'node:http';
import { randomBytes } from 'node:crypto';

const id = (prefix) => prefix + randomBytes(12).toString('hex');

// A Messages API content array → rough token count for usage figures.
function countTokens(body) {
	const text = JSON.stringify(body?.messages ?? []) + JSON.stringify(body?.system ?? '') + JSON.stringify(body?.tools ?? []);
	return Math.max(1, Math.ceil(text.length / 4));
}

// The blocks an answer consists of, in the API's Message shape.
function answerBlocks(answer) {
	const blocks = [];
	if (answer.text !== undefined && answer.text !== null) blocks.push({ type: 'text', text: String(answer.text) });
	for (const t of answer.toolUses ?? []) {
		blocks.push({ type: 'tool_use', id: t.id ?? id('toolu_'), name: t.name, input: t.input ?? {} });
	}
	if (blocks.length === 0) blocks.push({ type: 'text', text: '' });
	return blocks;
}

function stopReason(blocks) {
	return blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
}

// Split a string into a few pieces, as the API streams text in several deltas.
function chunks(s, n = 3) {
	if (s.length <= 1) return [s];
	const size = Math.ceil(s.length / n);
	const out = [];
	for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
	return out;
}

export async function startFakeAnthropic({ mainModel } = {}) {
	const script = [];
	const requests = [];
	const waiters = [];
	let gate = null; // { promise, resolve } while responses marked hold: true are held
	const openResponses = new Set();

	function newGate() {
		let resolve;
		const promise = new Promise((r) => (resolve = r));
		return { promise, resolve };
	}

	function notify() {
		for (const w of [...waiters]) {
			if (w.check()) {
				waiters.splice(waiters.indexOf(w), 1);
				w.resolve();
			}
		}
	}

	function isMain(rec) {
		const b = rec.body;
		if (rec.path !== '/v1/messages' || !b || typeof b !== 'object') return false;
		if (b.stream !== true) return false;
		if (mainModel && b.model !== mainModel) return false;
		return true;
	}

	function writeEvent(res, type, data) {
		res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
	}

	async function streamAnswer(req, res, rec, answer, model) {
		const blocks = answerBlocks(answer);
		const msgId = id('msg_');
		const inputTokens = countTokens(rec.body);
		const outputTokens = Math.max(1, Math.ceil(JSON.stringify(blocks).length / 4));
		res.writeHead(200, {
			'content-type': 'text/event-stream; charset=utf-8',
			'cache-control': 'no-cache',
			connection: 'keep-alive',
			'request-id': id('req_'),
			'anthropic-organization-id': '00000000-0000-0000-0000-000000000000',
		});
		let closed = false;
		res.on('close', () => {
			closed = true;
			if (!res.writableFinished) rec.aborted = true;
			notify();
		});
		openResponses.add(res);
		writeEvent(res, 'message_start', {
			message: {
				id: msgId,
				type: 'message',
				role: 'assistant',
				model,
				content: [],
				stop_reason: null,
				stop_sequence: null,
				usage: {
					input_tokens: inputTokens,
					cache_creation_input_tokens: 0,
					cache_read_input_tokens: 0,
					output_tokens: 1,
					service_tier: 'standard',
				},
			},
		});
		writeEvent(res, 'ping', {});
		if (answer.hold) {
			rec.held = true;
			notify();
			if (!gate) gate = newGate();
			await gate.promise;
			if (closed) return;
		}
		blocks.forEach((block, index) => {
			if (block.type === 'text') {
				writeEvent(res, 'content_block_start', { index, content_block: { type: 'text', text: '' } });
				for (const piece of chunks(block.text)) {
					writeEvent(res, 'content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
				}
			} else {
				writeEvent(res, 'content_block_start', {
					index,
					content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
				});
				writeEvent(res, 'content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
				for (const piece of chunks(JSON.stringify(block.input))) {
					writeEvent(res, 'content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
				}
			}
			writeEvent(res, 'content_block_stop', { index });
		});
		writeEvent(res, 'message_delta', {
			delta: { stop_reason: stopReason(blocks), stop_sequence: null },
			usage: { output_tokens: outputTokens },
		});
		writeEvent(res, 'message_stop', {});
		res.end();
		openResponses.delete(res);
	}

	function jsonAnswer(res, rec, answer, model) {
		const blocks = answerBlocks(answer);
		res.writeHead(200, { 'content-type': 'application/json', 'request-id': id('req_') });
		res.end(
			JSON.stringify({
				id: id('msg_'),
				type: 'message',
				role: 'assistant',
				model,
				content: blocks,
				stop_reason: stopReason(blocks),
				stop_sequence: null,
				usage: {
					input_tokens: countTokens(rec.body),
					cache_creation_input_tokens: 0,
					cache_read_input_tokens: 0,
					output_tokens: Math.max(1, Math.ceil(JSON.stringify(blocks).length / 4)),
					service_tier: 'standard',
				},
			}),
		);
	}

	function apiError(res, status, type, message) {
		res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req_') });
		res.end(JSON.stringify({ type: 'error', error: { type, message } }));
	}

	const server = http.createServer((req, res) => {
		const parts = [];
		req.on('data', (c) => parts.push(c));
		req.on('end', () => {
			const raw = Buffer.concat(parts).toString('utf8');
			const url = new URL(req.url, 'http://localhost');
			let body = null;
			try {
				body = raw ? JSON.parse(raw) : null;
			} catch {
				body = null;
			}
			const rec = {
				method: req.method,
				path: url.pathname,
				query: url.search,
				headers: req.headers,
				body,
				raw,
				at: Date.now(),
				main: false,
			};
			requests.push(rec);
			handle(req, res, rec).catch((err) => {
				rec.error = String(err);
				if (!res.headersSent) apiError(res, 500, 'api_error', String(err));
				else res.end();
			});
			notify();
		});
	});

	async function handle(req, res, rec) {
		if (req.method === 'POST' && rec.path === '/v1/messages/count_tokens') {
			res.writeHead(200, { 'content-type': 'application/json' });
			res.end(JSON.stringify({ input_tokens: countTokens(rec.body) }));
			return;
		}
		if (req.method === 'HEAD' || (req.method === 'GET' && rec.path === '/')) {
			res.writeHead(200);
			res.end();
			return;
		}
		if (req.method !== 'POST' || rec.path !== '/v1/messages') {
			apiError(res, 404, 'not_found_error', `fake-anthropic: no route for ${req.method} ${rec.path}`);
			return;
		}
		if (!rec.body || typeof rec.body !== 'object') {
			apiError(res, 400, 'invalid_request_error', 'fake-anthropic: body is not JSON');
			return;
		}
		rec.main = isMain(rec);
		let answer = { text: 'ok' };
		if (rec.main && script.length > 0) {
			answer = script.shift();
			rec.scripted = true;
		}
		rec.answer = answer;
		const model = rec.body.model ?? 'claude-sonnet-4-5';
		if (rec.body.stream === true) await streamAnswer(req, res, rec, answer, model);
		else jsonAnswer(res, rec, answer, model);
	}

	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address();

	const api = {
		url: `http://127.0.0.1:${port}`,
		requests,
		// Queue answers for the next main-loop requests, in order.
		respond(...answers) {
			script.push(...answers);
		},
		// How many scripted answers have not been used yet.
		pending() {
			return script.length;
		},
		mainRequests() {
			return requests.filter((r) => r.main);
		},
		sideRequests() {
			return requests.filter((r) => !r.main);
		},
		// Let responses marked hold: true go on.
		release() {
			if (gate) gate.resolve();
			gate = null;
		},
		// Resolves once check() holds (checked on every request and close).
		waitFor(check, what = 'condition', ms = 30000) {
			if (check()) return Promise.resolve();
			return new Promise((resolve, reject) => {
				const w = { check, resolve };
				waiters.push(w);
				const t = setTimeout(() => {
					const i = waiters.indexOf(w);
					if (i >= 0) waiters.splice(i, 1);
					reject(new Error(`fake-anthropic: timed out waiting for ${what}; requests so far: ${api.describe()}`));
				}, ms);
				t.unref?.();
				const orig = w.resolve;
				w.resolve = () => {
					clearTimeout(t);
					orig();
				};
			});
		},
		// A one-line-per-request summary, for failure messages.
		describe() {
			return (
				requests
					.map((r) => {
						const b = r.body ?? {};
						return `\n  ${r.method} ${r.path} model=${b.model} stream=${b.stream} tools=${b.tools?.length ?? 0} messages=${b.messages?.length ?? 0} main=${r.main} scripted=${!!r.scripted}`;
					})
					.join('') || ' (none)'
			);
		},
		async close() {
			api.release();
			for (const res of openResponses) res.destroy();
			server.closeAllConnections?.();
			await new Promise((resolve) => server.close(() => resolve()));
		},
	};
	return api;
}

// The text of a Messages API content value (a string or an array of blocks),
// with tool results' content flattened in.
export function contentText(content) {
	if (typeof content === 'string') return content;
	if (!Array.isArray(content)) return '';
	return content
		.map((b) => {
			if (b.type === 'text') return b.text;
			if (b.type === 'tool_result') return contentText(b.content);
			return '';
		})
		.join('\n');
}

// Every tool_result block in a request's messages.
export function toolResults(body) {
	const out = [];
	for (const m of body?.messages ?? []) {
		if (!Array.isArray(m.content)) continue;
		for (const b of m.content) if (b.type === 'tool_result') out.push(b);
	}
	return out;
}
