-- Security review M1: a list private to each account (`scope: account`) keeps an account's rows only while the account
-- belongs to the space. Leaving the space or being removed from it deletes the account's rows of that space, deleting
-- the account deletes its rows of every space, outright and in that transaction (docs/decisions.md). Their storage key
-- is `<list>~<accountId>` (model names never hold `~`): this index finds one account's rows across spaces without
-- reading every space's items. It holds private rows only, so other writes do not maintain it.
CREATE INDEX items_private ON items (collection) WHERE collection LIKE '%~%';

-- The private rows that outlived their account's membership before this rule: nobody could read or delete them, and
-- they counted against their space's quotas. The usage trigger gives the quotas back.
DELETE FROM items
WHERE collection LIKE '%~%'
  AND NOT EXISTS (
      SELECT 1 FROM memberships m
      WHERE m.space_id = items.family_id AND m.account_id = substr(items.collection, strpos(items.collection, '~') + 1)
  );
