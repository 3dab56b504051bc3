# tg_cached_python(VAR NAME): the prefix of an interpreter tunerguard's tools
# build or fetch into the cache (tools/dev py313t: NAME py313t), in VAR: the
# environment's TG_<NAME in capitals> where set, else
# $XDG_CACHE_HOME/tunerguard/NAME, else ~/.cache/tunerguard/NAME.  Whether it
# is there is the tests' business (they skip with 77 where it is not).
function(tg_cached_python var name)
  string(TOUPPER "TG_${name}" env)
  if(DEFINED ENV{${env}})
    set(${var} $ENV{${env}} PARENT_SCOPE)
  elseif(DEFINED ENV{XDG_CACHE_HOME})
    set(${var} $ENV{XDG_CACHE_HOME}/tunerguard/${name} PARENT_SCOPE)
  else()
    set(${var} $ENV{HOME}/.cache/tunerguard/${name} PARENT_SCOPE)
  endif()
endfunction()
