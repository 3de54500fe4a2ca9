/** A node of `EXPLAIN (ANALYZE, FORMAT JSON)`'s plan, with the fields the plan tests read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

function* nodes(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodes(child);
}

/**
 * Rows the plan's scans of tables read (returned or filtered out), over all their loops; only of the tables
 * `counted` names, when given. EXPLAIN gives each loop's rows as an average, rounded: a bound, not a tally.
 */
export function rowsRead(plan: PlanNode, counted: (table: string) => boolean = () => true): number {
  let read = 0;
  for (const node of nodes(plan)) {
    const table = node['Relation Name'];
    if (table === undefined || node['Node Type'] === 'ModifyTable' || !counted(table)) continue;
    const rows =
      (node['Actual Rows'] ?? 0) +
      (node['Rows Removed by Filter'] ?? 0) +
      (node['Rows Removed by Index Recheck'] ?? 0);
    read += rows * (node['Actual Loops'] ?? 1);
  }
  return read;
}
