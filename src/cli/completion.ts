/** `berth completion bash|zsh`: a completion script made from the command tree itself. */
import { type Command, Argument } from 'commander';
import { CliExit, EXIT, type CliIo } from './io.js';
import { action, type CliContext } from './shared.js';

/** Every command path (" deployments list") with the words that may follow it. */
function table(command: Command, path = ''): [string, string[]][] {
  const visible = command.commands.filter((sub) => !(sub as unknown as { _hidden?: boolean })._hidden);
  const words = [
    ...visible.flatMap((sub) => [sub.name(), ...sub.aliases()]),
    ...command.options.flatMap((option) => [option.long, option.short].filter((flag): flag is string => !!flag)),
    '--help',
  ];
  return [[path, words], ...visible.flatMap((sub) => [sub.name(), ...sub.aliases()].flatMap((name) => table(sub, `${path} ${name}`)))];
}

export function bashScript(program: Command): string {
  const rows = table(program);
  const quote = (text: string) => `"${text.replace(/(["\\$`])/g, '\\$1')}"`;
  return `# berth completion for bash (zsh: see \`berth completion zsh\`). Load with: source <(berth completion bash)
_berth_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    [[ "$word" == -* ]] && continue
    case "$path $word" in
${rows
  .filter(([path]) => path)
  .map(([path]) => `      ${quote(path)}) path="$path $word" ;;`)
  .join('\n')}
    esac
  done
  local words=""
  case "$path" in
${rows.map(([path, words]) => `    ${quote(path)}) words=${quote(words.join(' '))} ;;`).join('\n')}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _berth_complete berth
`;
}

export function registerCompletionCommand(program: Command, context: CliContext): void {
  program
    .command('completion')
    .description('Print a shell completion script: `source <(berth completion bash)`, or for zsh `source <(berth completion zsh)`.')
    .addArgument(new Argument('<shell>', 'shell').choices(['bash', 'zsh']))
    .action(
      action(context, async (_options, shell) => {
        const io: CliIo = context.io;
        if (shell !== 'bash' && shell !== 'zsh') throw new CliExit(EXIT.usage, `no completion for ${shell}`);
        const script = bashScript(program);
        io.out(
          shell === 'zsh' ? `# berth completion for zsh, through its bash completion support\nautoload -U +X bashcompinit && bashcompinit\n${script}` : script,
        );
      }),
    );
}
