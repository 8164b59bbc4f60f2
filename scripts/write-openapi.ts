// `npm run openapi`: regenerates openapi.yaml from the route schemas; commit the result
// (test/plugins/openapi.test.ts fails while the file and the code disagree).
import { writeFile } from 'node:fs/promises'
import { relative } from 'node:path'
import { OPENAPI_FILE, generateOpenApiYaml } from './openapi-document.ts'

await writeFile(OPENAPI_FILE, await generateOpenApiYaml())
console.log(`wrote ${relative(process.cwd(), OPENAPI_FILE)}`)
