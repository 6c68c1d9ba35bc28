import Anser, { type AnserJsonEntry } from 'anser';
import ansiRegex from 'ansi-regex';
import type { JSX } from 'preact';
import { useMemo } from 'preact/hooks';

/**
 * Build output's terminal styling as elements: the 16 colours by class (styles.css gives
 * them a look for light and dark), the 256-colour palette and truecolor as colours set on
 * the element (made readable on the page), bold, dim, italic, underline and
 * strike-through. Log lines come from repository contents and are hostile, so nothing here makes HTML from them: the text only
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

/** Anser reads colours only and leaves other sequences, and a lone ESC, in the text: only colour sequences stay. */
function colourOnly(text: string): string {
  let kept = '';
  let from = 0;
  for (const match of text.matchAll(ESCAPES)) {
    kept += text.slice(from, match.index).replace(CONTROLS, '') + (SGR.test(match[0]) ? match[0] : '');
    from = match.index + match[0].length;
  }
  return kept + text.slice(from).replace(CONTROLS, '');
}

type Rgb = readonly [number, number, number];

/** xterm's 256-colour palette past the 16 named colours: a 6×6×6 cube, then 24 greys. */
function paletteColour(index: number): Rgb {
  if (index >= 232) {
    const grey = 8 + (index - 232) * 10;
    return [grey, grey, grey];
  }
  const level = (n: number) => (n === 0 ? 0 : 55 + n * 40);
  const cube = index - 16;
  return [level(Math.floor(cube / 36)), level(Math.floor(cube / 6) % 6), level(cube % 6)];
}

/** One of Anser's colours (`ansi-red`, `ansi-palette-208`, `ansi-truecolor` with its `r, g, b`): a class, or a colour. */
function paint(name: string | null, truecolor: string | null): { className?: string; rgb?: Rgb } {
  if (!name) return {};
  if (name === 'ansi-truecolor') {
    const parts = (truecolor ?? '').split(',').map(Number);
    return parts.length === 3 && parts.every((n) => Number.isInteger(n) && n >= 0 && n <= 255) ? { rgb: parts as unknown as Rgb } : {};
  }
  const palette = /^ansi-palette-(\d+)$/.exec(name);
  if (palette) return { rgb: paletteColour(Number(palette[1])) };
  return { className: name };
}

/*
 * A build may colour text in any of 16 million colours, many unreadable on this page's
 * background. Colours given as numbers are moved toward the theme's text colour until they
 * read at WCAG AA (4.5:1); the 16 named colours are chosen per theme in styles.css.
 */
const THEMES = {
  // --panel and --fg of styles.css.
  light: { behind: [246, 248, 250] as Rgb, text: [27, 31, 36] as Rgb },
  dark: { behind: [22, 27, 34] as Rgb, text: [230, 237, 243] as Rgb },
};
const READABLE = 4.5;

function luminance([r, g, b]: Rgb): number {
  const linear = (c: number) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
  return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
}

function contrast(a: Rgb, b: Rgb): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

/** `colour`, mixed toward `toward` only as far as it takes to read on `behind`. */
function readable(colour: Rgb, behind: Rgb, toward: Rgb): Rgb {
  for (let step = 0; step <= 10; step += 1) {
    const mixed = colour.map((c, i) => Math.round(c + ((toward[i] as number) - c) * (step / 10))) as unknown as Rgb;
    if (contrast(mixed, behind) >= READABLE) return mixed;
  }
  return toward;
}

const css = (rgb: Rgb) => `rgb(${rgb.join(', ')})`;
const black: Rgb = [0, 0, 0];
const white: Rgb = [255, 255, 255];

/** The classes and style of a chunk: a colour set by number always reads on what is behind it. */
function look(chunk: AnserJsonEntry): { classes: string[]; style: Record<string, string> } {
  const theme = typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches ? THEMES.dark : THEMES.light;
  const fg = paint(chunk.fg, chunk.fg_truecolor);
  const bg = paint(chunk.bg, chunk.bg_truecolor);
  const classes = [...(fg.className && !bg.rgb ? [`${fg.className}-fg`] : []), ...(bg.className ? [`${bg.className}-bg`] : [])];
  const style: Record<string, string> = {};
  if (bg.rgb) {
    // On a background given by number, the text is whichever of black and white reads better, unless its own colour does.
    const toward = contrast(black, bg.rgb) > contrast(white, bg.rgb) ? black : white;
    style.backgroundColor = css(bg.rgb);
    style.color = css(readable(fg.rgb ?? toward, bg.rgb, toward));
  } else if (fg.rgb) {
    style.color = css(readable(fg.rgb, theme.behind, theme.text));
  }
  return { classes, style };
}

const DECORATIONS = new Set(['bold', 'dim', 'italic', 'underline', 'strikethrough']);

function styled(chunk: AnserJsonEntry, key: number): JSX.Element | string {
  const { classes, style } = look(chunk);
  classes.push(...chunk.decorations.filter((name) => DECORATIONS.has(name)).map((name) => `ansi-${name}`));
  if (classes.length === 0 && Object.keys(style).length === 0) return chunk.content;
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
