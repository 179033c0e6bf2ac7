#pragma once

/// A field added to a record after records of it were stored
/// (`storage/serial.hpp`): written always, read only while the input has
/// bytes left, so a record stored before ends earlier and the field keeps
/// the value it was constructed with. Only the last fields of a record
/// stored as a whole value may be trailing (the reader looks at the whole
/// input): never a record nested in another.

namespace spool::storage {

template <class T>
struct trailing {
  T& ref;
};

template <class T>
trailing<T> as_trailing(T& x) {
  return {x};
}

} // namespace spool::storage
