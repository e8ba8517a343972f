// The page `bosun serve` serves: its sessions, one session's conversation
// streamed live from its events, the approvals waiting on an answer, and a
// box to send a task, steer or cancel. No framework and no build step.
//
// Everything the server sends (model text, tool arguments and output) is
// shown with textContent, never parsed as HTML: it is untrusted. The page's
// Content-Security-Policy allows only this script and app.css.
'use strict';

const TOKEN_KEY = 'bosun-token';
const SESSION_KEY = 'bosun-session';
const SESSIONS_EVERY_MS = 2000;
const APPROVALS_EVERY_MS = 1000;
const QUIET_MS = 5000;

const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------ the token

// `bosun serve` prints http://ADDR/#token=TOKEN: the fragment never reaches
// the server or its logs. Kept for this tab only, and off the address bar.
function takeToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get('token');
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

const token = takeToken();

// ------------------------------------------------------------ the API

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token}` };
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    const said = data && (data.error || data.message);
    if (response.status === 401) refused();
    throw new ApiError(response.status, typeof said === 'string' ? said : `${method} ${path}: ${response.status}`);
  }
  return data;
}

const sessionPath = (id) => `/v1/sessions/${encodeURIComponent(id)}`;

let stopped = false;

function refused() {
  stopped = true;
  sessionStorage.removeItem(TOKEN_KEY);
  say('The server refused the token: open the address `bosun serve` printed, or add #token=… with yours.', true);
}

let statusTimer = 0;

function say(text, sticky = false) {
  const status = $('status');
  status.textContent = text;
  status.hidden = false;
  clearTimeout(statusTimer);
  if (!sticky) statusTimer = setTimeout(() => { status.hidden = true; }, 6000);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ------------------------------------------------------------ small DOM helpers

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function pretty(value) {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch (_) {
    return String(value);
  }
}

// A unified diff, one line per element, each classed by its kind.
function looksLikeDiff(text) {
  return typeof text === 'string' && /^@@ .* @@/m.test(text) && /^[-+]/m.test(text);
}

function diffBlock(text) {
  const pre = el('pre', 'diff');
  let inHunk = false;
  for (const line of text.split('\n')) {
    let kind = 'diff-context';
    if (line.startsWith('@@')) {
      kind = 'diff-hunk';
      inHunk = true;
    } else if (!inHunk && (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff '))) kind = 'diff-file';
    else if (line.startsWith('+')) kind = 'diff-add';
    else if (line.startsWith('-')) kind = 'diff-del';
    pre.append(el('span', kind, `${line}\n`));
  }
  return pre;
}

function outputBlock(text, className) {
  return looksLikeDiff(text) ? diffBlock(text) : el('pre', className, text);
}

// ------------------------------------------------------------ sessions

const sessions = new Map();
let shownSessions = '';
let selected = null;

function sessionLabel(session) {
  if (session.title) return session.title;
  const parts = String(session.workspace || '').split('/').filter(Boolean);
  return parts.length ? parts[parts.length - 1] : session.id;
}

async function loadSessions() {
  // The store's other sessions too: after a restart the server holds none
  // until one is resumed, which a click on it does.
  const data = await api('GET', '/v1/sessions?stored=true');
  const list = (data && data.sessions) || [];
  sessions.clear();
  for (const session of list) sessions.set(session.id, session);
  const key = JSON.stringify(list);
  if (key !== shownSessions) {
    shownSessions = key;
    renderSessions(list);
  }
  document.body.dataset.loaded = 'true';
  // The events say first when a turn starts or ends; the list says so
  // too, and is believed once the stream has been quiet a while (a turn
  // whose end was never streamed, say).
  const listed = selected && sessions.get(selected.id);
  if (listed && selected.running !== null && Date.now() - selected.lastEventAt > QUIET_MS) {
    selected.running = listed.state === 'running';
  }
  if (!selected) {
    const remembered = sessionStorage.getItem(SESSION_KEY);
    if (remembered && sessions.has(remembered)) select(remembered);
  }
  renderHeader();
}

// Running or idle: the selected session's own events know first.
function stateOf(session) {
  if (selected && selected.id === session.id && selected.running !== null) return selected.running ? 'running' : 'idle';
  return session.state;
}

function renderSessions(list) {
  const ul = $('sessions');
  ul.replaceChildren();
  for (const session of list) {
    const li = el('li', 'session');
    li.dataset.id = session.id;
    if (selected && selected.id === session.id) li.classList.add('selected');
    const button = el('button', 'session-button');
    button.type = 'button';
    button.append(el('span', 'session-name', sessionLabel(session)));
    const state = stateOf(session);
    button.append(el('span', `badge session-state state-${state}`, state));
    button.append(el('span', 'session-detail muted', `${session.model || ''} · ${session.mode || ''}`));
    button.title = `${session.workspace}\n${session.id}`;
    button.addEventListener('click', () => (session.state === 'stored' ? resume(session.id) : select(session.id)));
    li.append(button);
    ul.append(li);
  }
  $('no-sessions').hidden = list.length > 0;
}

// Hosts a stored session on this server again, then shows it.
async function resume(id) {
  try {
    await api('POST', `${sessionPath(id)}/resume`, {});
    await loadSessions();
    select(id);
  } catch (error) {
    say(`Cannot resume the session: ${error.message}`);
  }
}

function renderHeader() {
  const session = selected && sessions.get(selected.id);
  if (!selected) return;
  $('session-title').textContent = session ? sessionLabel(session) : selected.id;
  $('session-meta').textContent = session ? `${session.workspace} · ${session.model} · ${session.mode}` : '';
  const running = selected.running ?? (session && session.state === 'running');
  const badge = $('session-state');
  badge.textContent = running ? 'running' : 'idle';
  badge.className = `badge state-${running ? 'running' : 'idle'}`;
  $('steer').disabled = !running;
  $('cancel').disabled = !running;
  const listed = document.querySelector('#sessions .session.selected .session-state');
  if (listed) {
    listed.textContent = running ? 'running' : 'idle';
    listed.className = `badge session-state state-${running ? 'running' : 'idle'}`;
  }
}

async function createSession(event) {
  event.preventDefault();
  const body = { workspace: $('new-workspace').value.trim() };
  const model = $('new-model').value.trim();
  const mode = $('new-mode').value;
  if (model) body.model = model;
  if (mode) body.mode = mode;
  try {
    const session = await api('POST', '/v1/sessions', body);
    sessions.set(session.id, session);
    await loadSessions();
    select(session.id);
    $('task').focus();
  } catch (error) {
    say(`Cannot create the session: ${error.message}`);
  }
}

// ------------------------------------------------------------ one session's conversation

// What is shown of the selected session: its stream, the last event id
// seen, and where the next text goes.
function newView(id) {
  return {
    id,
    lastId: 0,
    abort: new AbortController(),
    running: null,
    lastEventAt: 0,
    turn: null,
    text: null,
    reasoning: null,
    calls: new Map(),
  };
}

function select(id) {
  if (selected && selected.id === id) return;
  if (selected) selected.abort.abort();
  selected = newView(id);
  sessionStorage.setItem(SESSION_KEY, id);
  $('conversation').replaceChildren();
  $('plan').hidden = true;
  for (const li of $('sessions').children) li.classList.toggle('selected', li.dataset.id === id);
  renderHeader();
  follow(selected);
}

function conversation() {
  return $('conversation');
}

function atBottom() {
  const box = conversation();
  return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
}

function append(view, node) {
  (view.turn || conversation()).append(node);
}

function startTurn(view, event) {
  view.turn = el('section', 'turn');
  view.turn.dataset.turn = event.turn ?? '';
  conversation().append(view.turn);
  view.text = null;
  view.reasoning = null;
}

function appendText(view, text) {
  if (!view.text) {
    view.text = el('div', 'assistant-text');
    view.text.append(document.createTextNode(''));
    append(view, view.text);
  }
  view.text.firstChild.appendData(text);
}

function appendReasoning(view, text) {
  if (!view.reasoning) {
    const details = el('details', 'reasoning');
    details.append(el('summary', '', 'Reasoning'));
    const pre = el('pre', 'reasoning-text');
    pre.append(document.createTextNode(''));
    details.append(pre);
    append(view, details);
    view.reasoning = pre;
  }
  view.reasoning.firstChild.appendData(text);
}

function toolCard(view, event) {
  let card = view.calls.get(event.call_id);
  if (card) return card;
  const node = el('div', 'tool-call');
  node.dataset.callId = event.call_id;
  const head = el('div', 'tool-head');
  const name = el('span', 'tool-name', event.name || 'tool');
  const status = el('span', 'tool-status badge');
  head.append(name, status);
  node.append(head);
  const args = el('div', 'tool-args');
  node.append(args);
  const live = el('pre', 'tool-tail');
  live.hidden = true;
  const note = el('div', 'tool-note muted');
  note.hidden = true;
  const output = el('div', 'tool-output');
  node.append(live, note, output);
  card = { node, name, status, args, live, note, output, hasArgs: false };
  view.calls.set(event.call_id, card);
  view.text = null;
  view.reasoning = null;
  append(view, node);
  return card;
}

function setStatus(card, status) {
  card.node.dataset.status = status;
  card.status.textContent = status.replace('-', ' ');
  card.status.className = `tool-status badge status-${status}`;
}

function showArguments(card, name, args) {
  if (card.hasArgs || args === undefined) return;
  card.hasArgs = true;
  card.args.replaceChildren(argumentsBlock(name, args));
}

// An edit's arguments as a diff; others as JSON.
function argumentsBlock(name, args) {
  if (args && typeof args === 'object') {
    const patch = args.patch ?? args.input;
    if (typeof patch === 'string' && (looksLikeDiff(patch) || name === 'apply_patch')) return diffBlock(patch);
    if (typeof args.old_text === 'string' && typeof args.new_text === 'string') {
      const lines = [`--- ${args.path ?? ''}`, `+++ ${args.path ?? ''}`, '@@ @@'];
      for (const line of args.old_text.split('\n')) lines.push(`-${line}`);
      for (const line of args.new_text.split('\n')) lines.push(`+${line}`);
      return diffBlock(lines.join('\n'));
    }
  }
  return el('pre', 'tool-arguments', pretty(args));
}

function showPlan(event) {
  const steps = event.steps || (event.plan && event.plan.steps) || event.plan || [];
  const ol = $('plan-steps');
  ol.replaceChildren();
  for (const step of Array.isArray(steps) ? steps : []) {
    const li = el('li', `plan-step step-${step.status || 'pending'}`);
    li.dataset.status = step.status || 'pending';
    li.append(el('span', 'step-mark'), el('span', 'step-text', step.step ?? step.text ?? ''));
    ol.append(li);
  }
  $('plan-explanation').textContent = event.explanation || '';
  $('plan').hidden = ol.childElementCount === 0;
}

function note(view, text, className = 'note') {
  view.text = null;
  append(view, el('div', className, text));
}

function tokens(usage) {
  if (!usage) return '';
  return `${usage.input ?? 0} in, ${usage.output ?? 0} out`;
}

function dollars(micros) {
  return typeof micros === 'number' ? `, $${(micros / 1e6).toFixed(4)}` : '';
}

// One event of the selected session, in order.
function render(view, event) {
  switch (event.type) {
    case 'user_message': {
      // The person's text: a task, a follow-up (queued while a turn runs)
      // or a steer.
      view.text = null;
      view.reasoning = null;
      const node = el('div', 'user-text', event.text ?? '');
      node.dataset.kind = event.kind || 'task';
      append(view, node);
      break;
    }
    case 'init':
      note(view, `Session on ${event.model}, ${event.mode} mode, sandbox ${event.sandbox ?? 'off'}, in ${event.workspace}`);
      break;
    case 'turn_start':
      startTurn(view, event);
      view.running = true;
      renderHeader();
      break;
    case 'text_delta':
      appendText(view, event.text ?? '');
      break;
    case 'reasoning_delta':
      appendReasoning(view, event.text ?? '');
      break;
    case 'tool_call_proposed': {
      const card = toolCard(view, event);
      showArguments(card, event.name, event.arguments);
      setStatus(card, 'proposed');
      break;
    }
    case 'approval_requested': {
      const card = toolCard(view, event);
      showArguments(card, event.name, event.arguments);
      setStatus(card, 'awaiting-approval');
      if (event.reason) {
        card.note.textContent = event.reason;
        card.note.hidden = false;
      }
      approvalsSoon();
      break;
    }
    case 'approval_decided': {
      const card = toolCard(view, event);
      const denied = String(event.decision || '').startsWith('denied') || event.decision === 'deny';
      card.note.textContent = `${String(event.decision || '').replaceAll('_', ' ')}${event.reason ? `: ${event.reason}` : ''}`;
      card.note.hidden = false;
      setStatus(card, denied ? 'denied' : 'approved');
      approvalsSoon();
      break;
    }
    case 'tool_start': {
      const card = toolCard(view, event);
      showArguments(card, event.name, event.arguments);
      setStatus(card, 'running');
      break;
    }
    case 'tool_progress': {
      const card = toolCard(view, event);
      card.note.textContent = event.message ?? '';
      card.note.hidden = false;
      break;
    }
    case 'tool_output': {
      const card = toolCard(view, event);
      card.live.textContent = (event.tail || []).join('\n');
      card.live.hidden = false;
      break;
    }
    case 'tool_retry': {
      const card = toolCard(view, event);
      card.note.textContent = `retry ${event.attempt}: ${event.error ?? ''}`;
      card.note.hidden = false;
      break;
    }
    case 'tool_end': {
      const card = toolCard(view, event);
      card.live.hidden = true;
      card.output.replaceChildren(outputBlock(String(event.output ?? ''), 'tool-result'));
      setStatus(card, event.is_error ? 'error' : 'done');
      break;
    }
    case 'plan_updated':
      showPlan(event);
      break;
    case 'turn_end': {
      view.running = false;
      const cost = dollars(event.cost_micros);
      note(view, `Turn ${event.outcome}${event.stop_reason ? ` (${event.stop_reason})` : ''}: ${tokens(event.usage)} tokens${cost}`,
        `turn-end outcome-${event.outcome}`);
      view.turn = null;
      renderHeader();
      break;
    }
    case 'error':
      // A cancelled turn says so in its end.
      if (event.kind !== 'cancelled') note(view, `${event.kind ?? 'error'}: ${event.message ?? ''}`, 'error');
      break;
    case 'model_retry':
      note(view, `The model is retried (attempt ${event.attempt}): ${event.reason ?? ''}`);
      break;
    case 'compacted':
      note(view, `History compacted (tier ${event.tier}): ${event.before} → ${event.after} tokens`);
      break;
    case 'message_delivered':
      note(view, event.delivery === 'steer' ? 'Steer delivered.' : 'Follow-up delivered.');
      break;
    case 'message_withdrawn':
      note(view, `A message was withdrawn by hook ${event.hook}: ${event.reason ?? ''}`, 'error');
      break;
    case 'hook_run':
      if (event.outcome !== 'continued') note(view, `Hook ${event.hook} (${event.point}): ${event.outcome}${event.reason ? ` ${event.reason}` : ''}`);
      break;
    case 'subagent': {
      const inner = event.event || {};
      if (inner.type === 'tool_start' || inner.type === 'turn_end') {
        note(view, `Sub-agent ${String(event.child ?? '').slice(0, 8)}: ${inner.type === 'tool_start' ? inner.name : `turn ${inner.outcome}`}`);
      }
      break;
    }
    case 'tools_changed':
      for (const notice of event.notices || []) note(view, notice);
      break;
    default:
      break;
  }
  // An event carrying a diff (a file's change) shows it, whatever its type.
  if (typeof event.diff === 'string' && event.diff) {
    view.text = null;
    append(view, diffBlock(event.diff));
  }
}

// Server-Sent Events over fetch (EventSource cannot send the token): `id:`
// and `data:` lines, a blank line ends an event, `:` lines keep the
// connection alive. A dropped stream reconnects from the last id seen.
async function follow(view) {
  let wait = 500;
  const signal = view.abort.signal;
  while (!signal.aborted && !stopped) {
    try {
      const headers = { Authorization: `Bearer ${token}` };
      if (view.lastId) headers['Last-Event-ID'] = String(view.lastId);
      const response = await fetch(`${sessionPath(view.id)}/events`, { headers, signal, cache: 'no-store' });
      if (response.status === 401) {
        refused();
        return;
      }
      if (response.status === 404) {
        say('That session no longer exists.');
        return;
      }
      if (!response.ok || !response.body) throw new ApiError(response.status, 'the event stream failed');
      await readEvents(response.body, (batch) => {
        // A stream that brought events and then dropped reconnects at once.
        wait = 0;
        // Laid out once per batch: a long history replays in large ones.
        const stick = atBottom();
        for (const [id, data] of batch) {
          if (id !== null && id <= view.lastId) continue;
          if (id !== null) view.lastId = id;
          let event;
          try {
            event = JSON.parse(data);
          } catch (_) {
            continue;
          }
          view.lastEventAt = Date.now();
          render(view, event);
        }
        if (stick) conversation().scrollTop = conversation().scrollHeight;
      });
    } catch (error) {
      if (signal.aborted) return;
    }
    await sleep(wait);
    wait = Math.min(Math.max(wait * 2, 500), 5000);
  }
}

// Calls `onBatch` with the [id, data] of the events each read completes.
async function readEvents(body, onBatch) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let id = null;
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    const batch = [];
    let end;
    while ((end = buffer.indexOf('\n')) >= 0) {
      let line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length) batch.push([id, data.join('\n')]);
        id = null;
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'id' && /^\d+$/.test(value)) id = Number(value);
    }
    if (batch.length) onBatch(batch);
  }
}

// ------------------------------------------------------------ the composer

async function send(event) {
  event.preventDefault();
  await post('messages', 'Send');
}

async function post(what, label) {
  const text = $('task').value.trim();
  if (!selected) {
    say('Pick a session first, or make one.');
    return;
  }
  if (!text) return;
  // The text shows when its `user_message` event comes back.
  try {
    const answer = await api('POST', `${sessionPath(selected.id)}/${what}`, { text });
    if ($('task').value.trim() === text) $('task').value = '';
    if (answer && answer.queued) say('Queued: it runs when this turn ends.');
  } catch (error) {
    say(error.status === 409 ? 'No turn is running.' : `${label} failed: ${error.message}`);
  }
}

async function cancel() {
  if (!selected) return;
  try {
    await api('POST', `${sessionPath(selected.id)}/cancel`);
    say('Cancelling the turn.');
  } catch (error) {
    say(error.status === 409 ? 'No turn is running.' : `Cancel failed: ${error.message}`);
  }
}

// ------------------------------------------------------------ approvals

const approvals = new Map();

async function loadApprovals() {
  const data = await api('GET', '/v1/approvals');
  const pending = (data && data.approvals) || [];
  const ul = $('approvals');
  const ids = new Set(pending.map((approval) => approval.id));
  for (const [id, node] of approvals) {
    if (!ids.has(id)) {
      node.remove();
      approvals.delete(id);
    }
  }
  for (const approval of pending) {
    if (!approvals.has(approval.id)) {
      const node = approvalCard(approval);
      approvals.set(approval.id, node);
      ul.append(node);
    }
  }
  $('no-approvals').hidden = approvals.size > 0;
}

// One refresh for a burst of approval events (a replayed history).
let approvalsTimer = 0;

function approvalsSoon() {
  if (approvalsTimer) return;
  approvalsTimer = setTimeout(() => {
    approvalsTimer = 0;
    loadApprovals().catch(() => {});
  }, 100);
}

function approvalCard(approval) {
  const li = el('li', 'approval');
  li.dataset.id = approval.id;
  li.dataset.session = approval.session_id;
  li.dataset.callId = approval.call_id;
  const session = sessions.get(approval.session_id);
  const where = el('button', 'approval-session link', session ? sessionLabel(session) : approval.session_id);
  where.type = 'button';
  where.addEventListener('click', () => select(approval.session_id));
  li.append(el('div', 'approval-tool', approval.tool), where);
  if (approval.reason) li.append(el('div', 'approval-reason', approval.reason));
  if (approval.protected) {
    li.append(el('div', 'approval-reason muted', 'A protected path: "Allow for session" allows this exact call only.'));
  }
  li.append(argumentsBlock(approval.tool, approval.arguments));
  const reason = el('input', 'deny-reason');
  reason.placeholder = 'why (for Deny, optional)';
  li.append(reason);
  const buttons = el('div', 'buttons');
  for (const [decision, label] of [['once', 'Allow once'], ['session', 'Allow for session'], ['deny', 'Deny']]) {
    const button = el('button', `decide decide-${decision}`, label);
    button.type = 'button';
    button.dataset.decision = decision;
    button.addEventListener('click', () => decide(approval.id, decision, reason.value.trim(), li));
    buttons.append(button);
  }
  li.append(buttons);
  return li;
}

async function decide(id, decision, reason, li) {
  for (const button of li.querySelectorAll('button')) button.disabled = true;
  const body = { decision };
  if (decision === 'deny' && reason) body.reason = reason;
  try {
    await api('POST', `/v1/approvals/${encodeURIComponent(id)}`, body);
  } catch (error) {
    say(error.status === 404 ? 'That approval was already answered.' : `The answer failed: ${error.message}`);
  }
  li.remove();
  approvals.delete(id);
  $('no-approvals').hidden = approvals.size > 0;
  loadApprovals().catch(() => {});
}

// ------------------------------------------------------------ start

async function every(ms, task) {
  while (!stopped) {
    if (!document.hidden) {
      try {
        await task();
      } catch (error) {
        if (stopped) return;
        say(error instanceof ApiError ? error.message : 'bosun serve does not answer; trying again.');
      }
    }
    await sleep(ms);
  }
}

function start() {
  // A token typed into the address of an open page changes only its hash.
  window.addEventListener('hashchange', () => {
    if (new URLSearchParams(location.hash.slice(1)).get('token')) location.reload();
  });
  $('new-session').addEventListener('submit', createSession);
  $('composer').addEventListener('submit', send);
  $('steer').addEventListener('click', () => post('steer', 'Steer'));
  $('cancel').addEventListener('click', cancel);
  $('task').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) $('composer').requestSubmit();
  });
  $('steer').disabled = true;
  $('cancel').disabled = true;
  if (!token) {
    say('No token: open the address `bosun serve` printed, or add #token=… with yours.', true);
    return;
  }
  every(SESSIONS_EVERY_MS, loadSessions);
  every(APPROVALS_EVERY_MS, loadApprovals);
}

start();
