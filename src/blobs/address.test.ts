import { classifyAddress, isAddressAllowed, type AddressClass } from './address.js';

const cases: [string, AddressClass][] = [
  ['8.8.8.8', 'public'],
  ['93.184.216.34', 'public'],
  ['10.1.2.3', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.1', 'public'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'private'],
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback'],
  ['0.0.0.0', 'unspecified'],
  ['169.254.1.1', 'link-local'],
  ['169.254.169.254', 'metadata'],
  ['169.254.170.2', 'metadata'],
  ['100.100.100.200', 'metadata'],
  ['168.63.129.16', 'metadata'],
  ['224.0.0.1', 'multicast'],
  ['255.255.255.255', 'reserved'],
  ['192.0.2.10', 'reserved'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['fc00::1', 'unique-local'],
  ['fd12:3456::1', 'unique-local'],
  ['fd00:ec2::254', 'metadata'],
  ['FD00:EC2:0:0:0:0:0:254', 'metadata'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'reserved'],
  ['2001:4860:4860::8888', 'public'],
  ['2606:4700::1111', 'public'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:169.254.169.254', 'metadata'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:8.8.8.8', 'public'],
  ['::127.0.0.1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['2002:7f00:1::', 'loopback'],
  ['2002:0808:0808::1', 'public'],
  ['not-an-ip', 'invalid'],
  ['1.2.3', 'invalid'],
];

describe('classifyAddress', () => {
  it.each(cases)('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe('isAddressAllowed', () => {
  it('allows public addresses whatever the setting', () => {
    expect(isAddressAllowed('public', false)).toBe(true);
    expect(isAddressAllowed('public', true)).toBe(true);
  });

  it.each<AddressClass>(['private', 'loopback', 'link-local', 'unique-local'])(
    '%s only when private networks are allowed',
    (cls) => {
      expect(isAddressAllowed(cls, false)).toBe(false);
      expect(isAddressAllowed(cls, true)).toBe(true);
    },
  );

  it.each<AddressClass>(['metadata', 'unspecified', 'multicast', 'reserved', 'invalid'])(
    '%s never',
    (cls) => {
      expect(isAddressAllowed(cls, true)).toBe(false);
    },
  );
});
