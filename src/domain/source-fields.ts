import { DomainError, type FieldIssue } from './errors.js';

/**
 * Why a name is not a valid git reference name, or null when it is: the rules of
 * `git check-ref-format --allow-onelevel` (git's `check_refname_format`), which a
 * property test compares with the real command. Beyond git's byte rules, a string that
 * is not well-formed Unicode is refused, since it could not reach git unchanged.
 */
export function refFormatProblem(name: string): string | null {
  if (name === '') return 'it is empty';
  if (name === '@') return "it is the single character '@'";
  if (/\p{Cs}/u.test(name)) return 'it is not well-formed Unicode';
  const forbidden = /[\0-\x20\x7f~^:?*[\\]/.exec(name)?.[0];
  if (forbidden !== undefined) return `it contains ${describeCharacter(forbidden)}`;
  if (name.includes('..')) return "it contains '..'";
  if (name.includes('@{')) return "it contains '@{'";
  for (const component of name.split('/')) {
    if (component === '') return "it has an empty path component (a leading, trailing or doubled '/')";
    if (component.startsWith('.')) return "a path component starts with '.'";
    if (component.endsWith('.lock')) return "a path component ends with '.lock'";
  }
  if (name.endsWith('.')) return "it ends with '.'";
  return null;
}

/**
 * Why `ref` cannot be a revision's `repo_ref`, or null when it can. A repo_ref names a
 * branch or a tag (`main`, `v1.2`, `refs/heads/main`, `refs/tags/v1.2`) or a commit by
 * its sha; whatever else reaches git is refused at the door rather than in the build:
 * anything `git check-ref-format --allow-onelevel` refuses (so no revision expressions
 * such as `main~1` or `@{u}`), a leading `-` (git would read `--upload-pack=…` as an
 * option), `HEAD` (never a branch name), and `refs/` names other than branches and tags
 * (a repository mirror holds only those).
 */
export function repoRefProblem(ref: string): string | null {
  if (ref.startsWith('-')) return "it starts with '-'";
  const format = refFormatProblem(ref);
  if (format) return format;
  if (ref === 'HEAD') return "'HEAD' is not a branch name; give the branch to build (e.g. 'main')";
  if (ref.startsWith('refs/') && !ref.startsWith('refs/heads/') && !ref.startsWith('refs/tags/')) {
    return "of the 'refs/' names only 'refs/heads/…' (branches) and 'refs/tags/…' (tags) can be built";
  }
  return null;
}

/**
 * Why `configPath` cannot be a `graph_config_path`, or null when it can: the file must be
 * named relative to the root of the checkout or archive and stay inside it, so no
 * absolute forms (`/…`, `C:/…`, `scheme://…`), no `..` segment, no backslash (which is
 * a directory separator elsewhere), no NUL or other control character, and it must name
 * a file (not end with `/`, not be only `.` segments).
 */
export function configPathProblem(configPath: string): string | null {
  if (/\p{Cs}/u.test(configPath)) return 'it is not well-formed Unicode';
  const control = /[\0-\x1f\x7f]/.exec(configPath)?.[0];
  if (control !== undefined) return `it contains ${describeCharacter(control)}`;
  if (configPath.includes('\\')) return "it contains '\\'; separate directories with '/'";
  if (configPath.startsWith('/') || /^[A-Za-z]:\//.test(configPath) || /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(configPath)) {
    return 'it is absolute; give the path relative to the root of the repository (e.g. langgraph.json or agent/langgraph.json)';
  }
  const segments = configPath.split('/');
  if (segments.includes('..')) return "it has a '..' segment, which could lead out of the repository";
  if (configPath.endsWith('/') || segments.every((segment) => segment === '' || segment === '.')) {
    return 'it names a directory, not a file (e.g. agent/langgraph.json)';
  }
  return null;
}

/** The `source_revision_config` fields a request may set, under every name clients use. */
export interface RevisionSourceFields {
  repo_ref?: string | null;
  graph_config_path?: string | null;
  langgraph_config_path?: string | null;
}

/**
 * Checks the git ref and the config path of a request's `source_revision_config` (every
 * alias) and refuses them all at once as a 422 in pydantic's vocabulary, `loc` naming the
 * field as the client spelled it.
 */
export function checkRevisionSourceFields(input: RevisionSourceFields | null | undefined): void {
  if (!input) return;
  const issues: FieldIssue[] = [];
  const check = (field: keyof RevisionSourceFields, what: string, problem: (value: string) => string | null) => {
    const value = input[field];
    if (value == null) return;
    const why = problem(value);
    if (why)
      issues.push({ type: 'value_error', loc: ['body', 'source_revision_config', field], msg: `Value error, ${field} must be ${what}: ${why}`, input: value });
  };
  check('repo_ref', 'a branch or tag name or a full commit sha', repoRefProblem);
  check('graph_config_path', 'a relative path inside the repository', configPathProblem);
  check('langgraph_config_path', 'a relative path inside the repository', configPathProblem);
  if (issues.length > 0) throw new DomainError('validation_error', issues.map((issue) => issue.msg).join('; '), issues);
}

function describeCharacter(character: string): string {
  const code = character.codePointAt(0) as number;
  if (code === 0x20) return 'a space';
  if (code < 0x20 || code === 0x7f) return `the control character U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return `'${character}'`;
}
