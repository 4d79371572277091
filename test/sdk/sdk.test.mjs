// Drives an agent executable through Anthropic's Claude Agent SDK for
// TypeScript (its `query()` with `pathToClaudeCodeExecutable`), against the
// scripted fake model server in fake-anthropic.mjs.
//
//   SEMA_SDK_EXE        the executable to drive: a built `sema`, or the real
//                       Claude Code binary (the SDK's optional
//                       @anthropic-ai/claude-agent-sdk-linux-x64/claude), which
//                       these tests are calibrated against
//   SEMA_AGENT_SDK_DIR  the installed SDK package, …/node_modules/@anthropic-ai/claude-agent-sdk
//                       (a directory that holds that node_modules also works)
//
//   node --test --test-reporter=spec test/sdk/sdk.test.mjs
//
// Every scenario has its own fake server and its own temporary directories
// (HOME, the state directories, TMPDIR, and the workspace that is the
// executable's cwd); nothing outside them is written.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { startFakeAnthropic, contentText, toolResults } from './fake-anthropic.mjs';

const MODEL = 'claude-sonnet-4-5';
const TEST_TIMEOUT_MS = 60_000;
// A scenario gives up (and kills the executable) a little before the test's
// own timeout, so that a hang fails the test instead of keeping Node alive.
const SCENARIO_DEADLINE_MS = 50_000;

function requiredEnv(name, what) {
	const v = process.env[name];
	if (!v) throw new Error(`${name} is not set: it must name ${what}`);
	return v;
}

const EXE = path.resolve(requiredEnv('SEMA_SDK_EXE', 'the executable to drive (a built sema, or the Claude Code binary)'));
if (!fs.existsSync(EXE)) throw new Error(`SEMA_SDK_EXE=${EXE} does not exist`);

function sdkEntry() {
	const dir = path.resolve(requiredEnv('SEMA_AGENT_SDK_DIR', 'the installed @anthropic-ai/claude-agent-sdk package directory'));
	for (const candidate of [
		path.join(dir, 'sdk.mjs'),
		path.join(dir, 'node_modules', '@anthropic-ai', 'claude-agent-sdk', 'sdk.mjs'),
	]) {
		if (fs.existsSync(candidate)) return candidate;
	}
	throw new Error(`SEMA_AGENT_SDK_DIR=${dir} holds no sdk.mjs of @anthropic-ai/claude-agent-sdk`);
}
const { query } = await import(pathToFileURL(sdkEntry()).href);

// ---------------------------------------------------------------------------
// Scenario scaffolding

// scenario(t, fn): a fake server and temporary directories for one test, torn
// down afterwards. fn receives { api, ws, home, env, run, stderr }; run(prompt,
// options) starts a query() with the scenario's environment.
async function scenario(t, fn) {
	const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sema-sdk-test-'));
	const home = path.join(root, 'home');
	const ws = path.join(root, 'workspace');
	const tmp = path.join(root, 'tmp');
	for (const d of [home, ws, tmp]) fs.mkdirSync(d);
	const api = await startFakeAnthropic({ mainModel: MODEL });
	const controllers = [];
	const stderr = [];

	const env = {
		PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
		HOME: home,
		USER: 'sdk-test',
		TMPDIR: tmp,
		XDG_CONFIG_HOME: path.join(home, '.config'),
		XDG_CACHE_HOME: path.join(home, '.cache'),
		XDG_DATA_HOME: path.join(home, '.local', 'share'),
		XDG_STATE_HOME: path.join(home, '.local', 'state'),
		// State directories: sema's and Claude Code's.
		SEMA_HOME: path.join(home, '.sema'),
		CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
		// The model: the fake server, with an API key.
		ANTHROPIC_BASE_URL: api.url,
		ANTHROPIC_API_KEY: 'test-key',
		// Keep the Claude Code binary offline and quiet.
		DISABLE_TELEMETRY: '1',
		DISABLE_ERROR_REPORTING: '1',
		DISABLE_AUTOUPDATER: '1',
		DISABLE_BUG_COMMAND: '1',
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
		CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
	};

	// run(prompt, options): start a query with this scenario's environment.
	function run(prompt, options = {}) {
		const abortController = new AbortController();
		controllers.push(abortController);
		return query({
			prompt,
			options: {
				pathToClaudeCodeExecutable: EXE,
				cwd: ws,
				env,
				model: MODEL,
				abortController,
				stderr: (data) => stderr.push(data),
				...options,
			},
		});
	}

	let timer;
	const deadline = new Promise((_, reject) => {
		timer = setTimeout(
			() =>
				reject(
					new Error(
						`scenario did not finish within ${SCENARIO_DEADLINE_MS} ms` +
							`\nrequests to the fake model:${api.describe()}` +
							`\nexecutable's stderr (tail): ${stderr.join('').slice(-2000)}`,
					),
				),
			SCENARIO_DEADLINE_MS,
		);
	});
	try {
		await Promise.race([fn({ api, ws, home, env, run, stderr }), deadline]);
	} catch (err) {
		// Add what the executable said, which usually explains the failure.
		const tail = stderr.join('').slice(-2000);
		if (tail && err && typeof err === 'object' && !String(err.message).includes(tail)) {
			err.message += `\nexecutable's stderr (tail): ${tail}`;
		}
		throw err;
	} finally {
		clearTimeout(timer);
		for (const c of controllers) c.abort();
		await api.close();
		// After a failure the executable may still be exiting (and writing
		// its transcript); remove the directories once it is gone.
		await processesGone(ws);
		fs.rmSync(root, { recursive: true, force: true });
	}
}

// Wait (up to 10 s) until no process has its working directory in dir.
// Linux only (it reads /proc); elsewhere it waits a moment.
async function processesGone(dir) {
	const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
	if (!fs.existsSync('/proc/self/cwd')) return sleep(500);
	const busy = () =>
		fs.readdirSync('/proc').some((pid) => {
			if (!/^[0-9]+$/.test(pid)) return false;
			try {
				const cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
				return cwd === dir || cwd.startsWith(dir + path.sep);
			} catch {
				return false;
			}
		});
	for (let i = 0; i < 100 && busy(); i++) await sleep(100);
}

// Collect every message of a query, in order.
async function collect(q) {
	const messages = [];
	for await (const m of q) messages.push(m);
	return messages;
}

// A user message as the SDK's streaming input carries it.
function userMessage(text) {
	return { type: 'user', message: { role: 'user', content: text }, parent_tool_use_id: null, session_id: '' };
}

// A promise with its resolve function, for pacing streaming input.
function signal() {
	let resolve;
	const promise = new Promise((r) => (resolve = r));
	return { promise, resolve };
}

const results = (messages) => messages.filter((m) => m.type === 'result');

function summary(messages) {
	return messages.map((m) => `${m.type}${m.subtype ? '/' + m.subtype : ''}`).join(', ');
}

// The concatenated text of every message of a model request.
function requestText(req) {
	return (req.body?.messages ?? []).map((m) => `${m.role}: ${contentText(m.content)}`).join('\n');
}

// The last user message's text in a model request.
function lastUserText(req) {
	const users = (req.body?.messages ?? []).filter((m) => m.role === 'user');
	return users.length ? contentText(users[users.length - 1].content) : '';
}

function assertSuccess(result, expectedText) {
	assert.ok(result, 'expected a result message');
	assert.equal(result.subtype, 'success', `result: ${JSON.stringify(result)}`);
	assert.equal(result.is_error, false, `result: ${JSON.stringify(result)}`);
	if (expectedText !== undefined) assert.equal(result.result, expectedText);
}

// The result lists the refused tool call in permission_denials.
function assertDenied(result, toolUseId) {
	assert.ok(Array.isArray(result.permission_denials), `the result has no permission_denials: ${JSON.stringify(result)}`);
	const d = result.permission_denials.find((x) => x.tool_use_id === toolUseId);
	assert.ok(d, `permission_denials lacks ${toolUseId}: ${JSON.stringify(result.permission_denials)}`);
	assert.equal(d.tool_name, 'Write');
}

// ---------------------------------------------------------------------------
// a. One-shot string prompt

test('one-shot string prompt: init, the scripted answer as a success result, ids on every message', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, run }) => {
		api.respond({ text: 'Hello from the fake model.' });
		const messages = await collect(run('Say hello, please.'));

		const init = messages.find((m) => m.type === 'system' && m.subtype === 'init');
		assert.ok(init, `no system/init message among: ${summary(messages)}`);
		assert.equal(typeof init.session_id, 'string');
		assert.ok(init.session_id.length > 0, 'system/init has an empty session_id');

		const rs = results(messages);
		assert.equal(rs.length, 1, `expected one result, got: ${summary(messages)}`);
		assertSuccess(rs[0], 'Hello from the fake model.');
		assert.equal(messages[messages.length - 1].type, 'result', 'the result is the last message');

		const assistant = messages.find((m) => m.type === 'assistant');
		assert.ok(assistant, `no assistant message among: ${summary(messages)}`);
		assert.ok(
			contentText(assistant.message.content).includes('Hello from the fake model.'),
			`assistant message: ${JSON.stringify(assistant)}`,
		);

		for (const m of messages) {
			assert.ok(typeof m.session_id === 'string' && m.session_id.length > 0, `no session_id: ${JSON.stringify(m)}`);
			assert.equal(m.session_id, init.session_id, `session_id differs from init's: ${JSON.stringify(m)}`);
			assert.ok(typeof m.uuid === 'string' && m.uuid.length > 0, `no uuid: ${JSON.stringify(m)}`);
		}
		assert.equal(new Set(messages.map((m) => m.uuid)).size, messages.length, 'uuids are not unique');

		const main = api.mainRequests();
		assert.equal(main.length, 1, `expected one model request:${api.describe()}`);
		assert.ok(lastUserText(main[0]).includes('Say hello, please.'), `the model was not sent the prompt: ${requestText(main[0])}`);
		assert.ok(Array.isArray(main[0].body.tools) && main[0].body.tools.length > 0, 'the model request offers no tools');
		assert.equal(api.pending(), 0);
	});
});

// b. Streaming input with two user messages

test('streaming input: two user messages give two results in one conversation', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, run }) => {
		api.respond({ text: 'The first answer: blue.' }, { text: 'The second answer: green.' });
		const firstResult = signal();
		async function* input() {
			yield userMessage('First question: name a colour.');
			await firstResult.promise;
			yield userMessage('Second question: name another colour.');
		}
		const messages = [];
		for await (const m of run(input())) {
			messages.push(m);
			if (m.type === 'result') firstResult.resolve();
		}

		const rs = results(messages);
		assert.equal(rs.length, 2, `expected two results, got: ${summary(messages)}`);
		assertSuccess(rs[0], 'The first answer: blue.');
		assertSuccess(rs[1], 'The second answer: green.');
		assert.equal(rs[0].session_id, rs[1].session_id, 'the two turns are in different sessions');

		const main = api.mainRequests();
		assert.equal(main.length, 2, `expected two model requests:${api.describe()}`);
		const second = requestText(main[1]);
		for (const s of ['First question: name a colour.', 'The first answer: blue.', 'Second question: name another colour.']) {
			assert.ok(second.includes(s), `the second model request lacks ${JSON.stringify(s)}:\n${second}`);
		}
		const roles = main[1].body.messages.map((m) => m.role);
		assert.ok(roles.includes('assistant'), `the second request has no assistant turn: ${roles}`);
	});
});

// c. canUseTool: allow and deny

test('canUseTool allow: the callback sees the Write, and the file is written', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, ws, run }) => {
		const target = path.join(ws, 'allowed.txt');
		const input = { file_path: target, content: 'written after approval\n' };
		api.respond({ toolUses: [{ id: 'toolu_allow_1', name: 'Write', input }] }, { text: 'Wrote the file.' });
		const calls = [];
		const messages = await collect(
			run('Write allowed.txt.', {
				permissionMode: 'default',
				canUseTool: async (toolName, toolInput, opts) => {
					calls.push({ toolName, toolInput, toolUseID: opts?.toolUseID });
					return { behavior: 'allow', updatedInput: toolInput };
				},
			}),
		);

		assert.equal(calls.length, 1, `canUseTool calls: ${JSON.stringify(calls)}`);
		assert.equal(calls[0].toolName, 'Write');
		assert.equal(calls[0].toolInput.file_path, target);
		assert.equal(calls[0].toolInput.content, input.content);
		assert.equal(calls[0].toolUseID, 'toolu_allow_1');

		assert.ok(fs.existsSync(target), 'the allowed Write did not create the file');
		assert.equal(fs.readFileSync(target, 'utf8'), input.content);

		const rs = results(messages);
		assert.equal(rs.length, 1, `expected one result, got: ${summary(messages)}`);
		assertSuccess(rs[0], 'Wrote the file.');

		const main = api.mainRequests();
		assert.equal(main.length, 2, `expected two model requests:${api.describe()}`);
		const tr = toolResults(main[1].body).find((b) => b.tool_use_id === 'toolu_allow_1');
		assert.ok(tr, `no tool_result for toolu_allow_1 in: ${JSON.stringify(main[1].body.messages.slice(-2))}`);
		assert.notEqual(tr.is_error, true, `the tool_result is an error: ${JSON.stringify(tr)}`);
	});
});

test('canUseTool deny: no file, and the model gets an error tool_result with the message', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, ws, run }) => {
		const target = path.join(ws, 'denied.txt');
		const input = { file_path: target, content: 'must not be written\n' };
		api.respond({ toolUses: [{ id: 'toolu_deny_1', name: 'Write', input }] }, { text: 'Understood, not writing it.' });
		const calls = [];
		const messages = await collect(
			run('Write denied.txt.', {
				permissionMode: 'default',
				canUseTool: async (toolName, toolInput) => {
					calls.push({ toolName, toolInput });
					return { behavior: 'deny', message: 'no: sdk-test-denial' };
				},
			}),
		);

		assert.equal(calls.length, 1, `canUseTool calls: ${JSON.stringify(calls)}`);
		assert.equal(calls[0].toolName, 'Write');
		assert.equal(calls[0].toolInput.file_path, target);
		assert.ok(!fs.existsSync(target), 'the denied Write created the file');

		const main = api.mainRequests();
		assert.equal(main.length, 2, `expected two model requests:${api.describe()}`);
		const tr = toolResults(main[1].body).find((b) => b.tool_use_id === 'toolu_deny_1');
		assert.ok(tr, `no tool_result for toolu_deny_1 in: ${JSON.stringify(main[1].body.messages.slice(-2))}`);
		assert.equal(tr.is_error, true, `the tool_result is not an error: ${JSON.stringify(tr)}`);
		assert.ok(contentText(tr.content).includes('no: sdk-test-denial'), `the tool_result lacks the deny message: ${JSON.stringify(tr)}`);

		const rs = results(messages);
		assert.equal(rs.length, 1, `expected one result, got: ${summary(messages)}`);
		assertSuccess(rs[0], 'Understood, not writing it.');
		assertDenied(rs[0], 'toolu_deny_1');
	});
});

// d. setPermissionMode before the prompt

test('setPermissionMode(acceptEdits) before the first message: Write runs without asking', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, ws, run }) => {
		const target = path.join(ws, 'accepted.txt');
		const input = { file_path: target, content: 'written in acceptEdits\n' };
		api.respond({ toolUses: [{ id: 'toolu_mode_1', name: 'Write', input }] }, { text: 'Done in acceptEdits.' });
		const calls = [];
		let q;
		// query() starts reading the input generator before it returns, so
		// the generator waits until q is assigned.
		const qAssigned = signal();
		const done = signal();
		let modeSet = false;
		let modeError = null;
		async function* inputMessages() {
			await qAssigned.promise;
			try {
				await q.setPermissionMode('acceptEdits');
				modeSet = true;
			} catch (err) {
				modeError = err;
				return;
			}
			yield userMessage('Write accepted.txt.');
			await done.promise;
		}
		q = run(inputMessages(), {
			permissionMode: 'default',
			canUseTool: async (toolName, toolInput) => {
				calls.push({ toolName, toolInput });
				return { behavior: 'deny', message: 'canUseTool should not have been asked' };
			},
		});
		qAssigned.resolve();
		const messages = [];
		for await (const m of q) {
			messages.push(m);
			if (m.type === 'result') done.resolve();
		}

		assert.equal(modeError, null, `setPermissionMode failed: ${modeError?.message}`);
		assert.ok(modeSet, 'setPermissionMode did not resolve');
		assert.deepEqual(calls, [], 'canUseTool was asked although the mode is acceptEdits');
		assert.ok(fs.existsSync(target), 'the Write did not create the file in acceptEdits mode');
		assert.equal(fs.readFileSync(target, 'utf8'), input.content);
		const rs = results(messages);
		assert.equal(rs.length, 1, `expected one result, got: ${summary(messages)}`);
		assertSuccess(rs[0], 'Done in acceptEdits.');
	});
});

// e. interrupt()
//
// Calibrated against Claude Code 2.1.334: interrupt() while the model is
// streaming cancels the HTTP request, the turn ends with a result of subtype
// error_during_execution (is_error true, with errors), and the process stays
// up and answers the next user message in the same session.

test('interrupt(): a turn waiting on the model ends with an error_during_execution result, and the session goes on', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, run }) => {
		// The first answer is held until the end of the test: only an
		// interrupt can end that turn.
		api.respond({ text: 'This answer must never arrive.', hold: true }, { text: 'Answer after the interrupt.' });
		const firstResult = signal();
		const secondResult = signal();
		async function* input() {
			yield userMessage('Start a long task.');
			await firstResult.promise;
			yield userMessage('Are you still there?');
			await secondResult.promise;
		}
		const q = run(input());
		const messages = [];
		const consumed = (async () => {
			for await (const m of q) {
				messages.push(m);
				if (m.type === 'result') {
					if (results(messages).length === 1) firstResult.resolve();
					else secondResult.resolve();
				}
			}
		})();

		consumed.catch(() => {}); // awaited below; this only keeps an early failure from being reported as unhandled
		const held = api.waitFor(() => api.mainRequests().some((r) => r.held), 'the model request to be held');
		held.catch(() => {});
		const first = await Promise.race([held.then(() => 'held'), consumed.then(() => 'ended')]);
		assert.equal(first, 'held', `the query ended before the model was asked: ${summary(messages)}`);
		await q.interrupt();
		await Promise.race([firstResult.promise, consumed]);
		await consumed;
		api.release();

		const rs = results(messages);
		assert.equal(rs.length, 2, `expected two results, got: ${summary(messages)}`);
		const [interrupted, after] = rs;
		assert.equal(interrupted.is_error, true, `the interrupted turn's result: ${JSON.stringify(interrupted)}`);
		assert.equal(interrupted.subtype, 'error_during_execution', `the interrupted turn's result: ${JSON.stringify(interrupted)}`);
		assert.ok(Array.isArray(interrupted.errors), `the error result has no errors array: ${JSON.stringify(interrupted)}`);
		assert.ok(
			!messages.some((m) => JSON.stringify(m).includes('This answer must never arrive.')),
			'the held answer was delivered although the turn was interrupted',
		);
		assertSuccess(after, 'Answer after the interrupt.');
		assert.equal(interrupted.session_id, after.session_id);

		const main = api.mainRequests();
		assert.equal(main.length, 2, `expected two model requests:${api.describe()}`);
		assert.ok(main[0].aborted, 'the held model request was not cancelled by the interrupt');
		assert.ok(requestText(main[1]).includes('Start a long task.'), `the turn after the interrupt lost the conversation:\n${requestText(main[1])}`);
	});
});

// f. resume

test('resume: a second query with resume: <session_id> continues the first conversation', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, run }) => {
		api.respond({ text: 'I will remember the word pineapple.' }, { text: 'The word was pineapple.' });
		const first = await collect(run('Remember the word pineapple.'));
		const r1 = results(first);
		assert.equal(r1.length, 1, `expected one result, got: ${summary(first)}`);
		assertSuccess(r1[0], 'I will remember the word pineapple.');
		const sessionId = r1[0].session_id;
		assert.ok(sessionId, 'the first result has no session_id');

		const second = await collect(run('Which word did I ask you to remember?', { resume: sessionId }));
		const r2 = results(second);
		assert.equal(r2.length, 1, `expected one result, got: ${summary(second)}`);
		assertSuccess(r2[0], 'The word was pineapple.');

		const main = api.mainRequests();
		assert.equal(main.length, 2, `expected two model requests:${api.describe()}`);
		const text = requestText(main[1]);
		for (const s of ['Remember the word pineapple.', 'I will remember the word pineapple.', 'Which word did I ask you to remember?']) {
			assert.ok(text.includes(s), `the resumed request lacks ${JSON.stringify(s)}:\n${text}`);
		}
	});
});

// g. allowedTools

test('allowedTools: [Write] in default mode without canUseTool: the Write runs', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, ws, run }) => {
		const target = path.join(ws, 'allowlisted.txt');
		const input = { file_path: target, content: 'allowed by allowedTools\n' };
		api.respond({ toolUses: [{ id: 'toolu_allowed_1', name: 'Write', input }] }, { text: 'Wrote it.' });
		const messages = await collect(run('Write allowlisted.txt.', { permissionMode: 'default', allowedTools: ['Write'] }));

		assert.ok(fs.existsSync(target), 'Write did not create the file although allowedTools lists it');
		assert.equal(fs.readFileSync(target, 'utf8'), input.content);
		const rs = results(messages);
		assert.equal(rs.length, 1, `expected one result, got: ${summary(messages)}`);
		assertSuccess(rs[0], 'Wrote it.');
		const main = api.mainRequests();
		assert.equal(main.length, 2, `expected two model requests:${api.describe()}`);
		const tr = toolResults(main[1].body).find((b) => b.tool_use_id === 'toolu_allowed_1');
		assert.ok(tr, 'no tool_result for the Write');
		assert.notEqual(tr.is_error, true, `the tool_result is an error: ${JSON.stringify(tr)}`);
	});
});

// The control for g: the same Write without allowedTools (and with nobody to
// ask) is refused, so g's file comes from allowedTools and not from a lax default.
test('default mode without allowedTools or canUseTool: the Write is refused', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, ws, run }) => {
		const target = path.join(ws, 'unlisted.txt');
		const input = { file_path: target, content: 'must not be written\n' };
		api.respond({ toolUses: [{ id: 'toolu_unlisted_1', name: 'Write', input }] }, { text: 'Could not write it.' });
		const messages = await collect(run('Write unlisted.txt.', { permissionMode: 'default' }));

		assert.ok(!fs.existsSync(target), 'Write created the file with no permission granted');
		const main = api.mainRequests();
		assert.equal(main.length, 2, `expected two model requests:${api.describe()}`);
		const tr = toolResults(main[1].body).find((b) => b.tool_use_id === 'toolu_unlisted_1');
		assert.ok(tr, 'no tool_result for the Write');
		assert.equal(tr.is_error, true, `the tool_result is not an error: ${JSON.stringify(tr)}`);
		const rs = results(messages);
		assert.equal(rs.length, 1, `expected one result, got: ${summary(messages)}`);
		assertSuccess(rs[0], 'Could not write it.');
		assertDenied(rs[0], 'toolu_unlisted_1');
	});
});

// h. plan mode
//
// Calibrated against Claude Code 2.1.334: in plan mode a Write is refused
// ("Cannot write to … while in plan mode") even when allowedTools lists
// Write, which is what this test relies on, so that it cannot pass merely
// because nothing granted the Write. (A canUseTool callback, by contrast, is
// still asked in plan mode, and a Write it allows is carried out.)

test('plan mode: a Write is refused even with allowedTools [Write]', { timeout: TEST_TIMEOUT_MS }, async (t) => {
	await scenario(t, async ({ api, ws, run }) => {
		const target = path.join(ws, 'planned.txt');
		const input = { file_path: target, content: 'must not be written in plan mode\n' };
		api.respond({ toolUses: [{ id: 'toolu_plan_1', name: 'Write', input }] }, { text: 'I will only plan.' });
		const messages = await collect(run('Write planned.txt.', { permissionMode: 'plan', allowedTools: ['Write'] }));

		assert.ok(!fs.existsSync(target), 'a Write in plan mode created the file');
		const main = api.mainRequests();
		assert.equal(main.length, 2, `expected two model requests:${api.describe()}`);
		const tr = toolResults(main[1].body).find((b) => b.tool_use_id === 'toolu_plan_1');
		assert.ok(tr, 'no tool_result for the Write');
		assert.equal(tr.is_error, true, `the tool_result is not an error: ${JSON.stringify(tr)}`);
		const rs = results(messages);
		assert.equal(rs.length, 1, `expected one result, got: ${summary(messages)}`);
		assertSuccess(rs[0], 'I will only plan.');
		assertDenied(rs[0], 'toolu_plan_1');
	});
});
