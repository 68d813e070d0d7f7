-- Compaction (src/agent/history): the older turns of a conversation, folded into one summary that
-- stays the same until the next compaction, so the prompt prefix it starts stays cacheable.
CREATE TABLE countersign.conversation_summaries (
  conversation_id text PRIMARY KEY REFERENCES countersign.conversations (id) ON DELETE CASCADE,
  -- The last message the summary covers: the history given to the model is the summary, then the
  -- messages after this id.
  through_message_id bigint NOT NULL,
  summary jsonb NOT NULL,
  compactions integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
