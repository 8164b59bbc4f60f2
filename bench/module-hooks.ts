// Loaded first in the compiled app server's process (`--import`, bench/processes.ts), as
// bin/storefront.js does before it loads the compiled app: the resolve hook that spares Node 24
// and 26 re-reading drizzle-orm's package.json for each of its files (bin/module-formats.js).
// Without it the bench's server on Node 24 took some 18 MB more at start than `storefront serve`.
import { speedUpModuleFormats } from '../bin/module-formats.js'

speedUpModuleFormats()
