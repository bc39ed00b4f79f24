/** An IPv4 address in dotted decimal as an unsigned 32-bit number, or null when it is not one. */
export function ipv4ToNumber(ip: string): number | null {
  let value = 0;
  let octet = -1;
  let dots = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
    if (c === 46) {
      if (octet < 0 || dots === 3) return null;
      value = value * 256 + octet;
      octet = -1;
      dots++;
    } else if (c >= 48 && c <= 57) {
      // Leading zeros are refused: "010" is octal to some parsers and decimal to others.
      if (octet === 0) return null;
      octet = octet < 0 ? c - 48 : octet * 10 + (c - 48);
      if (octet > 255) return null;
    } else {
      return null;
    }
  }
  if (dots !== 3 || octet < 0) return null;
  return value * 256 + octet;
}

export function numberToIpv4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** First and last address of an IPv4 CIDR (a bare address is a /32), or null when malformed. */
export function ipv4CidrRange(cidr: string): { start: number; end: number } | null {
  const slash = cidr.indexOf('/');
  const base = ipv4ToNumber(slash < 0 ? cidr : cidr.slice(0, slash));
  if (base === null) return null;
  const bitsText = slash < 0 ? '32' : cidr.slice(slash + 1);
  if (!/^\d{1,2}$/.test(bitsText)) return null;
  const bits = Number(bitsText);
  if (bits > 32) return null;
  const size = 2 ** (32 - bits);
  const start = base - (base % size);
  return { start, end: start + size - 1 };
}
