import Anser, { type AnserJsonEntry } from 'anser';
import ansiRegex from 'ansi-regex';
import type { JSX } from 'preact';
import { useMemo } from 'preact/hooks';

/**
 * Build output's terminal styling as elements: the 16 colours by class (styles.css gives
 * them a look for light and dark), the 256-colour palette and truecolor as colours set on
 * the element, bold, dim, italic, underline and strike-through. Log lines come from
 * repository contents and are hostile, so nothing here makes HTML from them: the text only
 * ever becomes text nodes, and colours reach the page through the DOM's style object,
 * which the page's Content-Security-Policy allows where a `style` attribute would not be.
 */

const ESCAPES = ansiRegex();
/** Control characters a terminal would act on and a page would show as boxes; tabs stay. */
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
/** A Select Graphic Rendition sequence (colours and weights): the only escapes kept for Anser. */
const SGR = /^\x1b\[[0-9;]*m$/;

/** The text a terminal would show: no escape sequence (cursor moves, titles, links, colours) nor control character. */
export function plainText(text: string): string {
  return text.replace(ESCAPES, '').replace(CONTROLS, '');
}

/** Anser reads colours only and leaves other sequences in the text: they go first. */
function colourOnly(text: string): string {
  return text.replace(ESCAPES, (sequence) => (SGR.test(sequence) ? sequence : '')).replace(CONTROLS, (char) => (char === '\x1b' ? char : ''));
}

/** xterm's 256-colour palette past the 16 named colours: a 6×6×6 cube, then 24 greys. */
function paletteColour(index: number): string {
  if (index >= 232) {
    const grey = 8 + (index - 232) * 10;
    return `rgb(${grey}, ${grey}, ${grey})`;
  }
  const level = (n: number) => (n === 0 ? 0 : 55 + n * 40);
  const cube = index - 16;
  return `rgb(${level(Math.floor(cube / 36))}, ${level(Math.floor(cube / 6) % 6)}, ${level(cube % 6)})`;
}

interface Paint {
  className?: string;
  colour?: string;
}

/** One of Anser's colours (`ansi-red`, `ansi-palette-208`, `ansi-truecolor` with its `r, g, b`) as a class or a colour. */
function paint(name: string | null, truecolor: string | null, side: 'fg' | 'bg'): Paint {
  if (!name) return {};
  if (name === 'ansi-truecolor') return truecolor ? { colour: `rgb(${truecolor})` } : {};
  const palette = /^ansi-palette-(\d+)$/.exec(name);
  if (palette) return { colour: paletteColour(Number(palette[1])) };
  return { className: `${name}-${side}` };
}

const DECORATIONS = new Set(['bold', 'dim', 'italic', 'underline', 'strikethrough']);

function styled(chunk: AnserJsonEntry, key: number): JSX.Element | string {
  const fg = paint(chunk.fg, chunk.fg_truecolor, 'fg');
  const bg = paint(chunk.bg, chunk.bg_truecolor, 'bg');
  const classes = [fg.className, bg.className, ...chunk.decorations.filter((name) => DECORATIONS.has(name)).map((name) => `ansi-${name}`)].filter(Boolean);
  const style = { ...(fg.colour ? { color: fg.colour } : {}), ...(bg.colour ? { backgroundColor: bg.colour } : {}) };
  if (classes.length === 0 && !fg.colour && !bg.colour) return chunk.content;
  return (
    <span key={key} class={classes.join(' ') || undefined} style={style}>
      {chunk.content}
    </span>
  );
}

/** A log line's text and styles, as Preact children (text and spans, never markup). */
export function AnsiText({ text }: { text: string }) {
  // A followed log renders again with each new line: each line is read once.
  const children = useMemo(
    () => Anser.ansiToJson(colourOnly(text), { json: true, remove_empty: true, use_classes: true }).map((chunk, index) => styled(chunk, index)),
    [text],
  );
  return <>{children}</>;
}
