/** `berth rollback` and `berth unpin`: a rollback that holds against build on push, and letting go of it. */
import type { Command } from 'commander';
import type { BerthClient, Revision } from '../client/index.js';
import { CliExit, EXIT } from './io.js';
import { action, type CliContext, clientFor, connected, deploymentIdOf } from './shared.js';

export function registerRollbackCommands(program: Command, context: CliContext): void {
  const { io } = context;
  connected(
    program
      .command('rollback')
      .description(
        'Deploy an earlier revision again and pin the deployment to it: build on push records pushes but builds nothing until `berth unpin`. ' +
          'Without <revision>, the revision that served before the current one.',
      )
      .argument('<deployment>', 'deployment id or name')
      .argument('[revision]', 'revision id or number (default: the previous DEPLOYED revision)'),
  ).action(
    action(context, async (options, reference, revisionRef) => {
      const berth = clientFor(io, options);
      const id = await deploymentIdOf(berth, reference!);
      const target = revisionRef ? await revisionOf(berth, id, revisionRef) : await previousDeployed(berth, id);
      const deployment = await berth.revisions.redeploy(id, target.id);
      const pin = deployment.pinned_revision_id ? `; pinned since ${deployment.pinned_at} (berth unpin ${reference} lets pushes build again)` : '';
      io.out(`rolling back to revision ${target.revision_number} (${target.id}) as revision ${deployment.latest_revision_id}${pin}\n`);
    }),
  );
  connected(
    program
      .command('unpin')
      .description('Let a rolled-back deployment follow its branch again: the next push builds. Does nothing to a deployment that is not pinned.')
      .argument('<deployment>', 'deployment id or name'),
  ).action(
    action(context, async (options, reference) => {
      const berth = clientFor(io, options);
      const id = await deploymentIdOf(berth, reference!);
      const before = await berth.deployments.get(id);
      await berth.deployments.unpin(id);
      io.out(before.pinned_revision_id ? `unpinned ${reference} (was pinned to revision ${before.pinned_revision_id})\n` : `${reference} was not pinned\n`);
    }),
  );
}

/** Every revision of the deployment, newest first. */
async function allRevisions(berth: BerthClient, deploymentId: string): Promise<Revision[]> {
  const all: Revision[] = [];
  for await (const page of berth.pages((page) => berth.revisions.list(deploymentId, page))) all.push(...page);
  return all;
}

/** A revision named by its id or its number. */
async function revisionOf(berth: BerthClient, deploymentId: string, reference: string): Promise<Revision> {
  if (!/^\d+$/.test(reference)) return berth.revisions.get(deploymentId, reference);
  const found = (await allRevisions(berth, deploymentId)).find((revision) => revision.revision_number === Number(reference));
  if (!found) throw new CliExit(EXIT.usage, `deployment ${deploymentId} has no revision number ${reference}`, 'see berth revisions list <deployment>');
  return found;
}

/**
 * The revision that served before the current one: the newest DEPLOYED revision older
 * than the active one (or the newest DEPLOYED one when nothing is active).
 */
async function previousDeployed(berth: BerthClient, deploymentId: string): Promise<Revision> {
  const deployment = await berth.deployments.get(deploymentId);
  const revisions = await allRevisions(berth, deploymentId);
  const current = revisions.find((revision) => revision.id === deployment.active_revision_id);
  const earlier = revisions.find((revision) => revision.status === 'DEPLOYED' && (!current || revision.revision_number < current.revision_number));
  if (!earlier) {
    throw new CliExit(
      EXIT.usage,
      current
        ? `no revision of ${deployment.name} was DEPLOYED before the current one (revision ${current.revision_number})`
        : `no revision of ${deployment.name} was ever DEPLOYED`,
      'name a revision: berth rollback <deployment> <revision>',
    );
  }
  return earlier;
}
