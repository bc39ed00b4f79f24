/** An all-or-nothing ipv4 batch (`IngestOptions.allOrNothing`) named a reserved address (`index`): it rolled back. */
export class ReservedInBatchError extends Error {
  constructor(
    readonly index: number,
    readonly range: string,
  ) {
    super(`item ${index} of an all-or-nothing ipv4 batch lies in the reserved range ${range}`);
    this.name = 'ReservedInBatchError';
  }
}
