/**
 * The three keyset indexes of `messages` (history, campaign, campaign within a conversation), in SQL both
 * engines read the same way; migration 1 of each engine creates them. Every one leads with the account and ends
 * with the history's keyset order (created_at, id, channel_user_id), so a page is one index range. SQLite's later
 * migrations key them by refs, and its migration 11 ends a conversation's two at created_at (sqlite/queries.ts).
 */
export const MESSAGE_INDEXES = `CREATE INDEX messages_history
        ON messages (account_id, conversation_id, created_at, id, channel_user_id);
      CREATE INDEX messages_campaign
        ON messages (account_id, campaign_id, created_at, id, channel_user_id)
        WHERE campaign_id IS NOT NULL;
      CREATE INDEX messages_conversation_campaign
        ON messages (account_id, conversation_id, campaign_id, created_at, id, channel_user_id)
        WHERE campaign_id IS NOT NULL;`;
