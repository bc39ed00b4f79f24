/** Addresses one WAFv2 IP set holds (the service quota). */
export const IP_SET_ADDRESSES = 10_000;
