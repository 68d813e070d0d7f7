export * from './api-shapes.ts';
export * from './custom-id.ts';
export * from './buttons.ts';
export * from './approval-card.ts';
