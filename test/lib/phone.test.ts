import t from 'tap'
import { phoneRegion, toE164 } from '../../lib/phone.ts'

t.test('phoneRegion: address.country when it is an ISO alpha-2 code, else the store default', async (t) => {
  t.equal(phoneRegion('US', null), 'US')
  t.equal(phoneRegion('DE', 'US'), 'DE', 'address.country wins over the store default')
  t.equal(phoneRegion('de', null), 'DE', 'any case')
  t.equal(phoneRegion(' gb ', null), 'GB', 'surrounding blanks are ignored')
  t.equal(phoneRegion(undefined, 'FR'), 'FR', 'no country: the store default')
  t.equal(phoneRegion('Germany', 'FR'), 'FR', 'a country name is not an ISO code: the store default')
  t.equal(phoneRegion('USA', 'FR'), 'FR', 'alpha-3 is not alpha-2')
  t.equal(phoneRegion('ZZ', 'FR'), 'FR', 'two letters that are no country')
  t.equal(phoneRegion('', 'FR'), 'FR')
  t.equal(phoneRegion(49, 'FR'), 'FR', 'a non-string country')
  t.equal(phoneRegion(undefined, null), undefined, 'neither: no region')
  t.equal(phoneRegion('Germany', null), undefined)
  t.equal(phoneRegion('ZZ', null), undefined)
  t.equal(phoneRegion(undefined, 'XX'), undefined, 'an unsupported default country is no region')
})

t.test('toE164: international numbers whatever the region', async (t) => {
  t.equal(toE164('+12133734253', undefined), '+12133734253')
  t.equal(toE164('+1 (213) 373-4253', undefined), '+12133734253', 'formatting is dropped')
  t.equal(toE164('  +44 20 7946 0958  ', undefined), '+442079460958', 'surrounding blanks are ignored')
  t.equal(toE164('+33 6 12 34 56 78', undefined), '+33612345678')
  t.equal(toE164('+1 213 373 4253', 'DE'), '+12133734253', 'a + number keeps its own country, not the region')
  t.equal(toE164('+49 30 12345678', 'US'), '+493012345678')
})

t.test('toE164: national numbers need a region', async (t) => {
  t.equal(toE164('2133734253', 'US'), '+12133734253')
  t.equal(toE164('(213) 373-4253', 'US'), '+12133734253')
  t.equal(toE164('020 7946 0958', 'GB'), '+442079460958', 'the trunk prefix 0 is dropped')
  t.equal(toE164('030 12345678', 'DE'), '+493012345678')
  t.equal(toE164('06 12 34 56 78', 'FR'), '+33612345678')
  t.equal(toE164('2133734253', undefined), null, 'without a region only + numbers are read')
  t.equal(toE164('020 7946 0958', undefined), null)
  t.equal(toE164('030 12345678', 'US'), null, 'a German national number is not a US number')
})

t.test('toE164: what is not a valid phone number', async (t) => {
  const invalid: Array<[string, unknown]> = [
    ['empty', ''],
    ['blank', '   '],
    ['too short', '12345'],
    ['too short international', '+1213373425'],
    ['no such country code', '+999123456'],
    ['letters only', 'call me'],
    ['a number', 12133734253],
    ['null', null],
    ['undefined', undefined],
    ['an object', { number: '+12133734253' }]
  ]
  for (const [name, value] of invalid) {
    t.equal(toE164(value, 'US'), null, name)
    t.equal(toE164(value, undefined), null, `${name}, no region`)
  }
})

t.test('toE164 output is always E.164', async (t) => {
  const inputs: Array<[string, 'US' | 'GB' | 'DE' | 'FR' | undefined]> = [
    ['+1 213-373-4253', undefined], ['213.373.4253', 'US'], ['020 7946 0958', 'GB'], ['030/12345678', 'DE'], ['0612345678', 'FR']
  ]
  for (const [input, region] of inputs) {
    t.match(toE164(input, region), /^\+[1-9]\d{6,14}$/, input)
  }
})
