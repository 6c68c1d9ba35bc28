/**
 * ISO 8601 date-times as pydantic reads them for FastAPI: a date (midnight), or a date and
 * a time (`T`, `t`, `_` or a space between), seconds and fractions optional, then `Z` or
 * an offset (`+02:00`, `+0200`, `+02`); without a zone the time is UTC (Python clients
 * send naive UTC times). Every field must exist on the calendar: `2024-02-30` is no date,
 * where JavaScript's own parser would roll it over to March 1.
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt _](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

/** Epoch milliseconds of an ISO 8601 date-time, or undefined when it is not one. */
export function parseDateTime(text: string): number | undefined {
  const match = DATE_TIME.exec(text);
  if (!match) return undefined;
  const number = (index: number) => Number(match[index] ?? '0');
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map(number) as [number, number, number, number, number, number];
  const [zoneHours, zoneMinutes] = [10, 11].map(number) as [number, number];
  const onCalendar = month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
  if (!onCalendar || hour > 23 || minute > 59 || second > 59 || zoneHours > 23 || zoneMinutes > 59) return undefined;
  const milliseconds = Number((match[7] ?? '').padEnd(3, '0').slice(0, 3));
  const offsetMinutes = match[9] === undefined ? 0 : (match[9] === '-' ? -1 : 1) * (zoneHours * 60 + zoneMinutes);
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: the latter reads years 0–99 as 1900–1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, milliseconds);
  return date.getTime() - offsetMinutes * 60_000;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
