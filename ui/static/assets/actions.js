// Actions that change the broker (DLQ requeue and delete, consumer group seek and delete): each
// asks for a confirmation in a dialog, runs through the API's own routes with the stored token,
// says what happened in the notice above the view, and redraws the view from the server.
import { ApiError } from './api.js';

const dialog = document.getElementById('confirm-dialog');
const notice = document.getElementById('notice');

// confirmAction shows the dialog and resolves true when the user confirms. danger colours the
// button; the dialog says what will happen, in the words of the route that does it.
export function confirmAction({ title, text, confirm = 'Confirm', danger = false }) {
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  const ok = document.getElementById('confirm-ok');
  ok.textContent = confirm;
  ok.className = danger ? 'danger' : '';
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => {
    // The close event is queued as a task after the dialog closes (HTML "close the dialog"), so
    // the one of an earlier showing can arrive after this showModal, when a click opened the
    // dialog again at once (input is served ahead of that task): it would answer this question
    // with the earlier one's empty returnValue and leave the real close without a listener.
    const onClose = () => {
      if (dialog.open) return; // an earlier showing's close
      dialog.removeEventListener('close', onClose);
      resolve(dialog.returnValue === 'ok');
    };
    dialog.addEventListener('close', onClose);
  });
}

// say shows a line above the view: kind 'ok' or 'error' (data-kind, for tests). It stays
// until the next action or navigation to another view.
export function say(kind, text) {
  notice.hidden = false;
  notice.dataset.kind = kind;
  notice.className = 'notice ' + kind;
  notice.textContent = text;
}

export function clearNotice() {
  notice.hidden = true;
  notice.textContent = '';
  delete notice.dataset.kind;
}

// explain turns a failed call into a sentence: a 403 names the role the route needs (spec 9.1).
export function explain(e, needs) {
  if (e instanceof ApiError && e.status === 403) {
    return 'The server refused (403 ' + e.message + '): this action needs a token with the ' + needs +
      ' role. Use "Access token" to enter one.';
  }
  if (e instanceof ApiError && e.status === 401) return 'The server asked for a token (401 ' + e.message + ').';
  return e instanceof ApiError && e.status ? 'The server answered ' + e.status + ': ' + e.message : String(e.message || e);
}

// act asks for the confirmation, runs fn (which returns the sentence of its success), reports
// and redraws. needs is the role the routes need when JWT auth is on.
// then, when given, is the hash to show afterwards (a deleted group's page has nothing left).
export async function act(question, needs, fn, then) {
  if (!(await confirmAction(question))) return false;
  let kind = 'ok';
  let text;
  try {
    text = await fn();
  } catch (e) {
    kind = 'error';
    text = explain(e, needs);
  }
  await redraw(kind === 'ok' ? then : undefined);
  say(kind, text); // after the redraw, so the notice sits over the server's new numbers
  return true;
}

// redraw asks the shell to render the current view again (app.js listens to hashchange) and
// resolves once it has (or after 10 s, should the view fail to answer).
export function redraw(target) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, 10000);
    window.addEventListener('comb:rendered', () => { clearTimeout(t); resolve(); }, { once: true });
    if (target && target !== location.hash) location.hash = target;
    else window.dispatchEvent(new HashChangeEvent('hashchange'));
  });
}
