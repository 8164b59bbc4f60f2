// Loaded first in the compiled app server's process (`--import`, bench/processes.ts), as
// bin/storefront.js does before it loads the compiled app: the resolve hook that spares Node 24
// and 26 re-reading drizzle-orm's package.json for each of its files (bin/module-formats.js).
// Without it, importing drizzle-orm alone took 18 MB more RSS on Node 24 (measured apart from the app).
import { speedUpModuleFormats } from '../bin/module-formats.js'

speedUpModuleFormats()
