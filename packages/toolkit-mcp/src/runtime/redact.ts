/**
 * Text with the userinfo of every URL in it (`https://user:secret@host/`) replaced by `***`,
 * so listing a profile or reporting a failed request never shows credentials put there.
 */
export const redactUrlCredentials = (text: string): string =>
  text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi, "$1***@")
