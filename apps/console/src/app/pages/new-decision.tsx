import { useState } from 'preact/hooks';
import { DecisionListResponse } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Field, Notice } from '../components.tsx';
import { canContribute, type Session } from '../session.ts';
import { kindOf } from '../indicator-kind.ts';
import { setDecision } from '../decide.ts';

/** A decision on any indicator, reported or not: it stays this organization's own. */
export function NewDecision({ session, onDone }: { session: Session; onDone: () => void }) {
  const [value, setValue] = useState('');
  const [ttlHours, setTtlHours] = useState('0');
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ kind: 'ok' | 'info' | 'error'; text: string }>();
  const [fields, setFields] = useState<Record<string, string>>({});
  if (!canContribute(session)) return null;
  async function decide(decision: 0 | 1) {
    const text = value.trim();
    setBusy(true);
    setMessage(undefined);
    setFields({});
    try {
      const hours = Number(ttlHours);
      const kind = kindOf(text);
      await setDecision(session.api, kind, text, decision, decision === 1 && hours > 0 ? Math.floor(Date.now() / 1000 + hours * 3600) : undefined, reason);
      // An IPv4 blacklist nobody reported is listed for the organization alone; the other kinds' feeds
      // and lists carry held indicators only: say which, rather than imply more or less is enforced.
      const listed = await session.api.get('/decisions', DecisionListResponse, { kind, q: text, page_size: 10 });
      const held = listed.items.find((d) => d.value.toLowerCase() === text.toLowerCase())?.held ?? true;
      const done = `${decision === 1 ? 'Blacklisted' : 'Whitelisted'} ${text} for your organization.`;
      setMessage(
        held || decision === 0
          ? { kind: 'ok', text: done }
          : kind === 'ipv4'
            ? { kind: 'info', text: `${done} Nobody has reported it: your lists, feed and agents block it for your organization alone.` }
            : { kind: 'info', text: `${done} Nobody has reported it yet, so no feed or agent blocks it until a member reports it.` },
      );
      setValue('');
      setReason('');
      onDone();
    } catch (err) {
      const d = describeError(err);
      setFields(d.fields);
      setMessage({ kind: 'error', text: d.message });
    } finally {
      setBusy(false);
    }
  }
  return (
    <form class="card" aria-label="New decision" onSubmit={(e) => e.preventDefault()}>
      <h2>New decision</h2>
      <p class="muted">On any address, network, domain, URL or digest, reported or not. It applies to your organization only.</p>
      <Field label="Indicator" name="indicator" value={value} onInput={setValue} error={fields.decision ?? fields.ip} />
      <Field label="TTL of a blacklisting (hours, 0 = none; IPv4 only)" type="number" value={ttlHours} onInput={setTtlHours} />
      <Field label="Reason (optional)" name="reason" value={reason} onInput={setReason} error={fields.reason} />
      <div class="actions">
        <button type="button" class="secondary" disabled={busy || value.trim() === ''} onClick={() => void decide(0)}>
          Whitelist
        </button>
        <button type="button" class="danger" disabled={busy || value.trim() === ''} onClick={() => void decide(1)}>
          Blacklist
        </button>
      </div>
      {message && <Notice kind={message.kind}>{message.text}</Notice>}
    </form>
  );
}
