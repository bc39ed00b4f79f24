const MONTHS: Record<string, number> = {
  Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11,
};

/** Apache error log: `Mon Dec 23 13:12:31 2013` or `Sat May 09 00:35:52.389262 2020`, local time. */
export function apacheErrorTime(text: string): number {
  const m = /^[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)(\.\d+)? (\d{4})$/.exec(text);
  const month = m ? MONTHS[m[1]!] : undefined;
  if (!m || month === undefined) return Number.NaN;
  return new Date(Number(m[7]), month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])).getTime() / 1000 + Number(m[6] ?? 0);
}

/** nginx error log: `2015/01/21 10:56:10`, local time. */
export function nginxErrorTime(text: string): number {
  const m = /^(\d{4})\/(\d\d)\/(\d\d) (\d\d):(\d\d):(\d\d)$/.exec(text);
  if (!m) return Number.NaN;
  return new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])).getTime() / 1000;
}

/** Common/combined access log: `20/Jan/2015:19:53:28 +0100`, with its own offset. */
export function accessLogTime(text: string): number {
  const m = /^(\d{1,2})\/([A-Z][a-z]{2})\/(\d{4}):(\d\d):(\d\d):(\d\d)(?:\.\d+)? ([+-])(\d\d):?(\d\d)$/.exec(text);
  const month = m ? MONTHS[m[2]!] : undefined;
  if (!m || month === undefined) return Number.NaN;
  const utc = Date.UTC(Number(m[3]), month, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6])) / 1000;
  const offset = (Number(m[8]) * 60 + Number(m[9])) * 60;
  return m[7] === '+' ? utc - offset : utc + offset;
}

/** Timestamps of ModSecurity JSON audit records (v3: `Mon Jan  1 10:00:00 2024`; v2: access-log form). */
export function auditTime(text: string): number {
  const v2 = accessLogTime(text);
  if (Number.isFinite(v2)) return v2;
  const m = /^[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})$/.exec(text);
  const month = m ? MONTHS[m[1]!] : undefined;
  if (!m || month === undefined) return Number.NaN;
  return new Date(Number(m[6]), month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])).getTime() / 1000;
}
