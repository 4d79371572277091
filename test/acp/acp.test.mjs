// Drives `sema acp` through the official Agent Client Protocol library for
// TypeScript (@agentclientprotocol/sdk, its client app), as an editor would:
// initialize, session/new, prompts whose tool calls ask for permission, a mode
// change, a cancelled command, session/load in a new process, and an editor that
// serves its unsaved buffers through fs/read_text_file and fs/write_text_file.
//
//   SEMA_ACP_EXE      the built sema binary
//   SEMA_ACP_SDK_DIR  the installed @agentclientprotocol/sdk package directory
//                     (a directory that holds its node_modules also works)
//
//   node --test --test-reporter=spec test/acp/acp.test.mjs
//
// The scenario has its own temporary directories (HOME, the state directory,
// the workspace); nothing outside them is written. The model is sema's scripted
// model, so no network is used.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';

function requiredEnv(name, what) {
	const v = process.env[name];
	if (!v) throw new Error(`${name} is not set: it must name ${what}`);
	return v;
}

const EXE = path.resolve(requiredEnv('SEMA_ACP_EXE', 'the sema binary to drive'));
if (!fs.existsSync(EXE)) throw new Error(`SEMA_ACP_EXE=${EXE} does not exist`);

function sdkEntry() {
	const dir = path.resolve(requiredEnv('SEMA_ACP_SDK_DIR', 'the installed @agentclientprotocol/sdk package directory'));
	for (const candidate of [
		path.join(dir, 'dist', 'v1', 'stable', 'acp.js'),
		path.join(dir, 'node_modules', '@agentclientprotocol', 'sdk', 'dist', 'v1', 'stable', 'acp.js'),
	]) {
		if (fs.existsSync(candidate)) return candidate;
	}
	throw new Error(`SEMA_ACP_SDK_DIR=${dir} holds no dist/v1/stable/acp.js of @agentclientprotocol/sdk`);
}
const acp = await import(pathToFileURL(sdkEntry()).href);
const { client, ndJsonStream, methods, PROTOCOL_VERSION } = acp;

const SLEEP = 'sleep 47.25'; // a command no other process on the machine runs

// The model's script: one turn per model request, in order, across the prompts.
const SCRIPT = {
	turns: [
		{ tool_calls: [{ name: 'Read', input: { file_path: 'a.txt' } }] },
		{ text: 'Editing a.txt.', tool_calls: [{ name: 'Edit', input: { file_path: 'a.txt', old_string: 'hello', new_string: 'goodbye' } }] },
		{ text: 'Edited a.txt.' },
		{ tool_calls: [{ name: 'Bash', input: { command: 'touch made.txt' } }] },
		{ text: 'The command was rejected.' },
		{ tool_calls: [{ name: 'Bash', input: { command: 'touch made.txt' } }] },
		{ text: 'Made it.' },
		{ tool_calls: [{ name: 'Bash', input: { command: SLEEP } }] },
		{ text: 'Slept.' },
	],
};

// startAgent launches `sema acp` and connects the client app to it. The client
// answers each permission request with answer(request) and collects every
// session/update in updates. With editor, the client also serves fs/read_text_file
// (editor.unsaved's text for a path it holds, else the disk) and fs/write_text_file
// (saved to the disk), recording each request in editor.reads and editor.writes.
function startAgent(dirs, answer, editor) {
	const child = spawn(EXE, ['acp', '--model', 'scripted/' + dirs.script, '--home', dirs.state, '--sandbox', 'off'], {
		cwd: dirs.ws,
		env: { ...process.env, HOME: dirs.home, SEMA_HOME: dirs.state, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' },
		stdio: ['pipe', 'pipe', 'pipe'],
	});
	let stderr = '';
	child.stderr.on('data', (d) => { stderr += d; });
	const updates = [];
	const permissions = [];
	const counts = { updates: 0 };
	const app = client({ name: 'sema-acp-test' })
		.onRequest(methods.client.session.requestPermission, async ({ params }) => {
			permissions.push(params);
			return answer(params);
		})
		.onNotification(methods.client.session.update, ({ params }) => {
			counts.updates++;
			updates.push(params);
		});
	if (editor) {
		app.onRequest(methods.client.fs.readTextFile, async ({ params }) => {
			editor.reads.push(params);
			const content = editor.unsaved.has(params.path) ? editor.unsaved.get(params.path) : fs.readFileSync(params.path, 'utf8');
			return { content };
		});
		app.onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
			editor.writes.push(params);
			editor.unsaved.delete(params.path);
			fs.writeFileSync(params.path, params.content);
			return {};
		});
	}
	// The lines as they came, counted before the library reads them: every update and
	// question sema sent must reach the handlers, none dropped by the library's schema
	// checks.
	const raw = { updates: 0, permissions: 0, terminal: 0 };
	let partial = '';
	child.stdout.on('data', (d) => {
		const lines = (partial + d).split('\n');
		partial = lines.pop();
		for (const l of lines) {
			const m = JSON.parse(l);
			if (m.method === methods.client.session.update) raw.updates++;
			if (m.method === methods.client.session.requestPermission) raw.permissions++;
			if (typeof m.method === 'string' && m.method.startsWith('terminal/')) raw.terminal++;
		}
	});
	const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
	const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
	const checkAll = () => {
		assert.equal(counts.updates, raw.updates, 'a session/update sema sent did not pass the library');
		assert.equal(permissions.length, raw.permissions, 'a permission request sema sent did not pass the library');
	};
	return { child, app, stream, updates, permissions, raw, exited, checkAll, stderr: () => stderr };
}

function kinds(updates) {
	return updates.map((u) => u.update.sessionUpdate);
}

// sleepRunning reports whether a process runs SLEEP (its command line in /proc).
function sleepRunning() {
	const want = SLEEP.split(' ').join('\0');
	for (const pid of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(pid)) continue;
		try {
			const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
			if (cmd.includes(want)) return true;
		} catch { /* the process ended meanwhile */ }
	}
	return false;
}

async function waitFor(what, cond, ms = 20_000) {
	const end = Date.now() + ms;
	while (Date.now() < end) {
		if (cond()) return;
		await new Promise((r) => setTimeout(r, 50));
	}
	throw new Error(`timed out waiting for ${what}`);
}

test('an editor drives sema acp through the official client library', { timeout: 90_000 }, async (t) => {
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sema-acp-'));
	t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
	const dirs = { home: path.join(tmp, 'home'), state: path.join(tmp, 'state'), ws: path.join(tmp, 'ws'), script: path.join(tmp, 'script.json') };
	for (const d of [dirs.home, dirs.state, dirs.ws]) fs.mkdirSync(d, { recursive: true });
	fs.writeFileSync(dirs.script, JSON.stringify(SCRIPT));
	fs.writeFileSync(path.join(dirs.ws, 'a.txt'), 'hello\n');
	const ws = fs.realpathSync(dirs.ws);

	// What the client answers, question by question.
	const answers = ['allow_once', 'reject_once', 'allow_once', 'allow_once'];
	const a = startAgent(dirs, () => ({ outcome: { outcome: 'selected', optionId: answers.shift() } }));
	t.after(() => a.child.kill('SIGKILL'));
	let sessionId;
	await a.app.connectWith(a.stream, async (cx) => {
		const init = await cx.request(methods.agent.initialize, {
			protocolVersion: PROTOCOL_VERSION,
			clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
			clientInfo: { name: 'sema-acp-test', version: '1' },
		});
		assert.equal(init.protocolVersion, 1);
		assert.equal(init.agentCapabilities.loadSession, true);
		assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
		assert.equal(init.agentCapabilities.promptCapabilities.image, true);
		assert.equal(init.agentInfo.name, 'sema');
		assert.deepEqual(init.authMethods, []);

		const created = await cx.request(methods.agent.session.new, { cwd: ws, mcpServers: [] });
		sessionId = created.sessionId;
		assert.match(sessionId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		assert.equal(created.modes.currentModeId, 'default');
		assert.deepEqual(created.modes.availableModes.map((m) => m.id), ['default', 'acceptEdits', 'plan'],
			'bypassPermissions is offered only when sema acp was started with it');

		// 1. An edit: asked, allowed once, reported with its diff, written.
		let r = await cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'change hello to goodbye' }] });
		assert.equal(r.stopReason, 'end_turn');
		assert.equal(a.permissions.length, 1);
		const ask = a.permissions[0];
		assert.equal(ask.sessionId, sessionId);
		assert.equal(ask.toolCall.kind, 'edit');
		assert.deepEqual(ask.options.map((o) => o.kind), ['allow_once', 'allow_always', 'reject_once', 'reject_always']);
		const call = a.updates.find((u) => u.update.sessionUpdate === 'tool_call' && u.update.kind === 'edit');
		assert.ok(call, `no tool_call among ${kinds(a.updates)}`);
		assert.equal(call.update.status, 'pending');
		assert.equal(call.update.kind, 'edit');
		assert.deepEqual(call.update.locations, [{ path: path.join(ws, 'a.txt') }]);
		assert.equal(call.update.rawInput.old_string, 'hello');
		assert.equal(ask.toolCall.toolCallId, call.update.toolCallId);
		const done = a.updates.find((u) => u.update.sessionUpdate === 'tool_call_update' && u.update.toolCallId === call.update.toolCallId && u.update.status === 'completed');
		assert.ok(done, `no completed tool_call_update among ${kinds(a.updates)}`);
		assert.deepEqual(done.update.content, [{ type: 'diff', path: path.join(ws, 'a.txt'), oldText: 'hello\n', newText: 'goodbye\n' }]);
		assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'goodbye\n');
		const said = a.updates.filter((u) => u.update.sessionUpdate === 'agent_message_chunk').map((u) => u.update.content.text).join('');
		assert.match(said, /Editing a\.txt\./);
		assert.match(said, /Edited a\.txt\./);

		// 2. A command rejected once: not run.
		a.updates.length = 0;
		r = await cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'make the file' }] });
		assert.equal(r.stopReason, 'end_turn');
		assert.equal(a.permissions.length, 2);
		assert.equal(a.permissions[1].toolCall.kind, 'execute');
		assert.equal(fs.existsSync(path.join(ws, 'made.txt')), false, 'a rejected command ran');
		assert.ok(a.updates.some((u) => u.update.sessionUpdate === 'tool_call_update' && u.update.status === 'failed'),
			`the rejected call is not reported failed: ${kinds(a.updates)}`);

		// Calibration: the same command, allowed, creates its file.
		r = await cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'make the file, really' }] });
		assert.equal(r.stopReason, 'end_turn');
		assert.equal(fs.existsSync(path.join(ws, 'made.txt')), true, 'the allowed command did not run');

		// 3. The mode picker.
		a.updates.length = 0;
		await cx.request(methods.agent.session.setMode, { sessionId, modeId: 'plan' });
		await waitFor('current_mode_update', () => a.updates.some((u) => u.update.sessionUpdate === 'current_mode_update' && u.update.currentModeId === 'plan'));
		await assert.rejects(cx.request(methods.agent.session.setMode, { sessionId, modeId: 'yolo' }), /not offered/);
		await cx.request(methods.agent.session.setMode, { sessionId, modeId: 'default' });

		// 4. A running command cancelled: the prompt resolves cancelled, no process left.
		a.updates.length = 0;
		const running = cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'wait a while' }] });
		await waitFor('the sleep to run', sleepRunning);
		await cx.notify(methods.agent.session.cancel, { sessionId });
		r = await running;
		assert.equal(r.stopReason, 'cancelled');
		await waitFor('the sleep to end', () => !sleepRunning(), 5_000);

		// An unknown session is a clear error.
		await assert.rejects(cx.request(methods.agent.session.prompt, { sessionId: 'no-such-session', prompt: [{ type: 'text', text: 'x' }] }), /no open session/);
	});
	a.child.stdin.end();
	const exit = await a.exited;
	a.checkAll();
	assert.equal(exit.code, 0, `sema acp exited ${JSON.stringify(exit)}; stderr:\n${a.stderr()}`);

	// 5. session/load in a new process replays the history.
	const b = startAgent(dirs, () => ({ outcome: { outcome: 'cancelled' } }));
	t.after(() => b.child.kill('SIGKILL'));
	await b.app.connectWith(b.stream, async (cx) => {
		await cx.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
		const loaded = await cx.request(methods.agent.session.load, { sessionId, cwd: ws, mcpServers: [] });
		assert.ok(loaded.modes, 'session/load answers with the modes');
		const ks = kinds(b.updates);
		assert.ok(ks.includes('user_message_chunk'), `no user_message_chunk in the replay: ${ks}`);
		assert.ok(ks.includes('agent_message_chunk'), `no agent_message_chunk in the replay: ${ks}`);
		assert.ok(ks.includes('tool_call'), `no tool_call in the replay: ${ks}`);
		assert.ok(b.updates.some((u) => u.update.sessionUpdate === 'tool_call_update' && u.update.status === 'completed'), `no completed call in the replay: ${ks}`);
		const users = b.updates.filter((u) => u.update.sessionUpdate === 'user_message_chunk').map((u) => u.update.content.text);
		assert.deepEqual(users.slice(0, 2), ['change hello to goodbye', 'make the file']);
		await assert.rejects(cx.request(methods.agent.session.load, { sessionId: '00000000-0000-4000-8000-000000000000', cwd: ws, mcpServers: [] }), /no session/);
	});
	b.child.stdin.end();
	assert.equal((await b.exited).code, 0, b.stderr());
	b.checkAll();
});

test('an editor that serves its files gets the model\'s reads and edits of them', { timeout: 60_000 }, async (t) => {
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sema-acp-fs-'));
	t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
	const dirs = { home: path.join(tmp, 'home'), state: path.join(tmp, 'state'), ws: path.join(tmp, 'ws'), script: path.join(tmp, 'script.json') };
	for (const d of [dirs.home, dirs.state, dirs.ws]) fs.mkdirSync(d, { recursive: true });
	fs.writeFileSync(dirs.script, JSON.stringify({ turns: SCRIPT.turns.slice(0, 3) }));
	fs.writeFileSync(path.join(dirs.ws, 'a.txt'), 'hello\n');
	const ws = fs.realpathSync(dirs.ws);
	const file = path.join(ws, 'a.txt');
	const editor = { unsaved: new Map([[file, 'hello, typed but not saved\n']]), reads: [], writes: [] };
	const a = startAgent(dirs, () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } }), editor);
	t.after(() => a.child.kill('SIGKILL'));
	await a.app.connectWith(a.stream, async (cx) => {
		await cx.request(methods.agent.initialize, {
			protocolVersion: PROTOCOL_VERSION,
			clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
		});
		const { sessionId } = await cx.request(methods.agent.session.new, { cwd: ws, mcpServers: [] });
		const r = await cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'change hello to goodbye' }] });
		assert.equal(r.stopReason, 'end_turn');
		assert.ok(editor.reads.length > 0, 'the editor was never asked for the file');
		for (const q of editor.reads) assert.deepEqual([q.sessionId, q.path], [sessionId, file]);
		assert.equal(a.permissions.length, 1, 'the edit was not asked about');
		assert.equal(a.permissions[0].toolCall.kind, 'edit');
		assert.deepEqual(editor.writes, [{ sessionId, path: file, content: 'goodbye, typed but not saved\n' }]);
		const read = a.updates.find((u) => u.update.sessionUpdate === 'tool_call_update' && u.update.status === 'completed' &&
			JSON.stringify(u.update.content ?? []).includes('typed but not saved'));
		assert.ok(read, `the model was not shown the unsaved buffer: ${kinds(a.updates)}`);
		// The diff shown is of the editor's text, not the disk's.
		const done = a.updates.find((u) => u.update.sessionUpdate === 'tool_call_update' && u.update.status === 'completed' &&
			Array.isArray(u.update.content) && u.update.content.some((c) => c.type === 'diff'));
		assert.deepEqual(done.update.content, [{ type: 'diff', path: file, oldText: 'hello, typed but not saved\n', newText: 'goodbye, typed but not saved\n' }]);
	});
	a.child.stdin.end();
	assert.equal((await a.exited).code, 0, a.stderr());
	a.checkAll();
	// The editor's terminal was offered and not used: commands stay in sema's shell.
	assert.equal(a.raw.terminal, 0, 'sema sent a terminal/* request');
});
