import { quoteWord } from "@stoat/core/ssh"

/** Quotes only the words a shell would split or expand. */
export const shellWord = (word: string): string => (/^[A-Za-z0-9@%+=:,./_-]+$/.test(word) ? word : quoteWord(word))
