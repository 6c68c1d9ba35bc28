import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { BerthClient } from '../client/index.js';
import type { Session } from './session.js';

export interface Workplace {
  session: Session;
  client: BerthClient;
  /** The workspace chosen in the URL (`?workspace=`), for keys that may switch; else the key's own. */
  workspaceId: string | undefined;
  /** A link inside the dashboard that keeps the chosen workspace. */
  link(path: string, query?: Record<string, string | undefined>): string;
  /** Called when an answer says the session ended (401): back to sign-in. */
  signedOut(): void;
}

export const WorkplaceContext = createContext<Workplace | null>(null);

export function useWorkplace(): Workplace {
  const workplace = useContext(WorkplaceContext);
  if (!workplace) throw new Error('useWorkplace outside the signed-in shell');
  return workplace;
}

/** `path?query`, leaving out empty values. */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}
