// Moved: the turn lifecycle owns enqueueing. Kept while callers move to turn-lifecycle.ts.
export { enqueueInboundWorkItem, enqueueWorkItem, type InboundEnqueueOptions } from './turn-lifecycle.ts';
