// Types of bin/module-formats.js (plain JavaScript: it runs before any TypeScript is loaded).
import type { ResolveHookSync } from 'node:module'

export declare function isModuleScope (dir: string): boolean
export declare const resolveModuleFormat: ResolveHookSync
export declare function speedUpModuleFormats (): void
