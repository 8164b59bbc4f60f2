// Types of bin/heap.js (plain JavaScript: it runs before any TypeScript is loaded).
export declare const DEFAULT_HEAP_LIMIT_MB: number
export declare function heapLimitMb (env?: NodeJS.ProcessEnv): number
export declare function heapFlags (mb: number, given?: string[]): string[]
export declare function needsBound (mb: number, limitBytes?: number, flags?: string[]): boolean
export declare function runBounded (env?: NodeJS.ProcessEnv): Promise<number | null>
export declare function watchParent (): void
